package wire

import (
	"bufio"
	"errors"
	"io"
)

// DiscardBody discards the body a response's status and framing call for and counts its
// bytes: none after a HEAD request or for a 101, 204 or 304; a chunked body; contentLength
// bytes (-1: no Content-Length); else everything up to the close, which untilClose reports
// (such a response ends its connection: it cannot carry another).
func DiscardBody(br *bufio.Reader, status int, head, chunked bool, contentLength int64) (n int64, untilClose bool, err error) {
	switch {
	case head || status == 204 || status == 304 || status == 101:
		return 0, false, nil
	case chunked:
		n, err = DiscardChunked(br)
		return n, false, err
	case contentLength >= 0:
		k, err := br.Discard(int(contentLength))
		if err != nil && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return int64(k), false, err
	}
	n, err = io.Copy(io.Discard, br)
	return n, true, err
}
