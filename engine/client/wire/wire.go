// Package wire holds the byte-level pieces of HTTP/1.1 that engine/client's model client
// reads a response with: lines, bodies (chunked, by length or up to the close), decimal
// and hexadecimal numbers and case-folded tokens, each without allocating on the common
// path; and the checks of the tokens and values it writes in a request.
package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrMalformed is the error a response that breaks HTTP/1.1's syntax wraps.
var ErrMalformed = errors.New("malformed response")

// IsDigit says whether b is an ASCII digit.
func IsDigit(b byte) bool { return b >= '0' && b <= '9' }

// ReadLine returns one line without its CRLF. A stream that ends before the line is
// complete is io.EOF if nothing at all was read, else io.ErrUnexpectedEOF.
func ReadLine(br *bufio.Reader, first bool) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, br.Size())
		}
		if errors.Is(err, io.EOF) && (!first || len(line) > 0) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// DiscardChunked reads a chunked body and its trailer section.
func DiscardChunked(br *bufio.Reader) (int64, error) {
	var total int64
	for {
		line, err := ReadLine(br, false)
		if err != nil {
			return total, err
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, ok := parseHex(bytes.TrimSpace(line))
		if !ok {
			return total, fmt.Errorf("%w: chunk size %q", ErrMalformed, Truncate(line))
		}
		if size == 0 {
			for {
				t, err := ReadLine(br, false)
				if err != nil {
					return total, err
				}
				if len(t) == 0 {
					return total, nil
				}
			}
		}
		n, err := br.Discard(int(size))
		total += int64(n)
		if err != nil {
			return total, io.ErrUnexpectedEOF
		}
		crlf, err := ReadLine(br, false)
		if err != nil {
			return total, err
		}
		if len(crlf) != 0 {
			return total, fmt.Errorf("%w: no CRLF after chunk", ErrMalformed)
		}
	}
}

// ParseUint reads a decimal number of at most 18 digits.
func ParseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !IsDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}

// EqualFold compares a header name with a lower-case literal without allocating.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// ContainsFold reports whether the lower-case token appears in b, ignoring case.
func ContainsFold(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		if EqualFold(b[i:i+len(lower)], lower) {
			return true
		}
	}
	return false
}

// Truncate is b for an error message: its first 64 bytes.
func Truncate(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
