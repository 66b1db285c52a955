package report

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// appendRequest appends r as encoding/json's Encoder writes it (the same field order, number
// forms and string escapes, HTML escaping included) and a newline, without reflection or an
// allocation per line: a 1M-request run writes 1M of them. TestRequestEncodingMatchesJSON
// holds the two encodings equal over random values, TestRequestEncodingWritesEveryField
// over every field of Request, found by reflection.
func appendRequest(b []byte, r *Request) ([]byte, error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(r.Seq), 10)
	var err error
	num := func(name string, f float64) {
		b = append(b, name...)
		if b, err = appendFloat(b, f, err); err != nil {
			return
		}
	}
	num(`,"start_ms":`, r.StartMs)
	num(`,"latency_ms":`, r.LatencyMs)
	b = append(b, `,"conn":`...)
	b = strconv.AppendUint(b, r.Conn, 10)
	b = append(b, `,"reused":`...)
	b = strconv.AppendBool(b, r.Reused)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	if r.HiddenRetries != 0 {
		b = append(b, `,"hidden_retries":`...)
		b = strconv.AppendInt(b, int64(r.HiddenRetries), 10)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, r.Bytes, 10)
	str := func(name, s string) {
		if s != "" {
			b = append(b, name...)
			b = appendString(b, s)
		}
	}
	str(`,"class":`, r.Class)
	str(`,"error":`, r.Error)
	str(`,"code":`, r.Code)
	if r.ConnectMs != 0 {
		num(`,"connect_ms":`, r.ConnectMs)
	}
	if r.TLSMs != 0 {
		num(`,"tls_ms":`, r.TLSMs)
	}
	if r.FirstByteMs != 0 {
		num(`,"first_byte_ms":`, r.FirstByteMs)
	}
	if r.ScheduledMs != nil {
		num(`,"scheduled_ms":`, *r.ScheduledMs)
	}
	if r.QueueWaitMs != nil {
		num(`,"queue_wait_ms":`, *r.QueueWaitMs)
	}
	if r.ServerConn != 0 {
		b = append(b, `,"server_conn":`...)
		b = strconv.AppendUint(b, r.ServerConn, 10)
	}
	if r.ServerClosedMs != nil {
		num(`,"server_closed_ms":`, *r.ServerClosedMs)
	}
	str(`,"server_close_reason":`, r.ServerCloseReason)
	if r.BackendConn != 0 {
		b = append(b, `,"backend_conn":`...)
		b = strconv.AppendUint(b, r.BackendConn, 10)
	}
	if r.BackendAttempts != 0 {
		b = append(b, `,"backend_attempts":`...)
		b = strconv.AppendInt(b, int64(r.BackendAttempts), 10)
	}
	if r.BackendReused {
		b = append(b, `,"backend_reused":true`...)
	}
	str(`,"client":`, r.Client)
	b = append(b, "}\n"...)
	return b, err
}

// appendFloat writes f as encoding/json does (encode.go, floatEncoder: ES6 number form, 'e'
// below 1e-6 and from 1e21, exponent not padded); NaN and infinities are the error json
// gives. The first error is kept.
func appendFloat(b []byte, f float64, err error) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		if err == nil {
			err = fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
		}
		return b, err
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, err
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping on (encode.go,
// appendString): <, > and & as \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
