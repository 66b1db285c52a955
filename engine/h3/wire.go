package h3

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go/quicvarint"

	"github.com/kalab-dev/kalab/engine/server"
)

// HTTP/3 frame types (RFC 9114 section 7.2).
const (
	frameData    = 0x00
	frameHeaders = 0x01
)

// connHeader is the embedded servers' connection stamp as HTTP/3 spells it (lower case).
var connHeader = strings.ToLower(server.ConnHeader)

// maxHeaderBlock bounds a response's HEADERS frame, as http3's own client does
// (http.DefaultMaxHeaderBytes).
const maxHeaderBlock = http.DefaultMaxHeaderBytes

// The client writes its requests' frames itself, on streams it opens on the QUIC
// connection, instead of through http3.RequestStream: SendRequestHeader refuses a request
// with a body and, for POST, PUT and PATCH, then declares "content-length: 0", so a POST
// with a body could not go out before the handshake completed, which is what ZeroRTT
// "all" exists to try. http3.ClientConn still runs the connection's control streams
// (SETTINGS, GOAWAY). Every request of a client is the same, so its bytes are built once.

// encodeRequest returns a request's HEADERS frame and, with a body, its DATA frame, as
// one byte slice. The pseudo-headers come first, then the headers in sorted order, so a
// request is the same bytes every time. The header block uses QPACK's static table and
// literals only: the client announces no dynamic table.
func encodeRequest(method, authority, path string, headers map[string]string, bodyBytes int) ([]byte, error) {
	var block bytes.Buffer
	enc := qpack.NewEncoder(&block)
	fields := []qpack.HeaderField{
		{Name: ":method", Value: method}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: authority}, {Name: ":path", Value: path},
	}
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := strings.ToLower(k)
		switch name {
		case "host", "content-length", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			continue // the authority, the body's length, or HTTP/1.1's connection headers (RFC 9114 4.2)
		}
		fields = append(fields, qpack.HeaderField{Name: name, Value: headers[k]})
	}
	if bodyBytes > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		fields = append(fields, qpack.HeaderField{Name: "content-length", Value: strconv.Itoa(bodyBytes)})
	}
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	out := appendFrameHeader(nil, frameHeaders, block.Len())
	out = append(out, block.Bytes()...)
	if bodyBytes > 0 {
		out = appendFrameHeader(out, frameData, bodyBytes)
		out = append(out, bytes.Repeat([]byte{'k'}, bodyBytes)...)
	}
	return out, nil
}

func appendFrameHeader(b []byte, typ uint64, n int) []byte {
	return quicvarint.Append(quicvarint.Append(b, typ), uint64(n))
}

// response is what a request's stream brought back.
type response struct {
	status     int
	serverConn uint64    // the Kalab-Conn header
	bytes      int64     // body bytes read
	firstByte  time.Time // when the stream's first byte was read; zero when none came
}

// readResponse reads a response from a request stream to its end: interim (1xx) HEADERS,
// the final HEADERS, DATA frames, trailers and unknown frames, which RFC 9114 9 says to
// skip. A stream that ends before the final headers, or before the Content-Length the
// headers promised, is io.ErrUnexpectedEOF. A response to HEAD, a 204 and a 304 carry no
// body whatever their Content-Length says.
func readResponse(r io.Reader, head bool) (response, error) {
	var resp response
	br := bufio.NewReader(r)
	length := int64(-1) // the Content-Length, when the headers give one
	for {
		// The stream may end only between frames: a frame type cut short after its first
		// byte is an unexpected end (quicvarint.Read says io.EOF for both).
		_, end := br.Peek(1)
		typ, err := quicvarint.Read(br)
		if resp.firstByte.IsZero() && err == nil {
			resp.firstByte = time.Now()
		}
		if end == io.EOF && resp.status >= 200 {
			bodyless := head || resp.status == http.StatusNoContent || resp.status == http.StatusNotModified
			if length >= 0 && resp.bytes != length && !bodyless {
				return resp, fmt.Errorf("body of %d bytes, %d promised: %w", resp.bytes, length, io.ErrUnexpectedEOF)
			}
			return resp, nil
		}
		n, err := frameLength(br, err)
		if err != nil {
			return resp, err
		}
		switch {
		case typ == frameHeaders && resp.status < 200:
			length, err = readHeaders(br, n, &resp)
		case typ == frameData && resp.status >= 200:
			var m int64
			m, err = io.CopyN(io.Discard, br, n)
			resp.bytes += m
		case typ == frameData:
			err = errors.New("http3: DATA before the response headers")
		default: // trailers, reserved and unknown frames
			_, err = io.CopyN(io.Discard, br, n)
		}
		if err != nil {
			return resp, unexpected(err)
		}
	}
}

// frameLength reads a frame's length after its type was read with typeErr.
func frameLength(br *bufio.Reader, typeErr error) (int64, error) {
	if typeErr != nil {
		return 0, unexpected(typeErr)
	}
	n, err := quicvarint.Read(br)
	if err != nil {
		return 0, unexpected(err)
	}
	if n > 1<<40 {
		return 0, fmt.Errorf("http3: frame of %d bytes", n)
	}
	return int64(n), nil
}

// unexpected turns a stream's end in the middle of a response into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readHeaders decodes a HEADERS frame of n bytes into resp and returns the Content-Length
// it declares, or -1.
func readHeaders(br *bufio.Reader, n int64, resp *response) (int64, error) {
	if n > maxHeaderBlock {
		return -1, fmt.Errorf("http3: HEADERS frame of %d bytes (max %d)", n, maxHeaderBlock)
	}
	block := make([]byte, n)
	if _, err := io.ReadFull(br, block); err != nil {
		return -1, err
	}
	length := int64(-1)
	next := qpack.NewDecoder().Decode(block)
	for {
		f, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return -1, fmt.Errorf("http3: response headers: %w", err)
		}
		switch f.Name {
		case ":status":
			resp.status, _ = strconv.Atoi(f.Value)
		case "content-length":
			length, _ = strconv.ParseInt(f.Value, 10, 64)
		case connHeader:
			resp.serverConn, _ = strconv.ParseUint(f.Value, 10, 64)
		}
	}
	if resp.status < 100 || resp.status > 599 {
		return -1, fmt.Errorf("http3: response status %d", resp.status)
	}
	if resp.status < 200 {
		resp.status = 0 // an interim response: the final one follows
	}
	return length, nil
}
