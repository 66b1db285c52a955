package h3

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go/quicvarint"
)

// headersFrame is a HEADERS frame of fields, encoded by qpack's own encoder (quic-go's).
func headersFrame(t testing.TB, fields ...qpack.HeaderField) []byte {
	var block bytes.Buffer
	enc := qpack.NewEncoder(&block)
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return append(appendFrameHeader(nil, frameHeaders, block.Len()), block.Bytes()...)
}

func frame(typ uint64, payload []byte) []byte {
	return append(appendFrameHeader(nil, typ, len(payload)), payload...)
}

// FuzzReadResponse feeds the HTTP/3 response reader arbitrary stream bytes: it must return
// (never panic or spin), and a response it accepts is a final status it was sent, with no
// more body bytes than the stream held.
//
// Run: go test ./engine/h3 -run '^$' -fuzz '^FuzzReadResponse$' -fuzztime 60s
func FuzzReadResponse(f *testing.F) {
	ok := headersFrame(f, qpack.HeaderField{Name: ":status", Value: "200"}, qpack.HeaderField{Name: "content-length", Value: "3"})
	f.Add(append(append([]byte{}, ok...), frame(frameData, []byte("abc"))...), false)
	f.Add(append(append(headersFrame(f, qpack.HeaderField{Name: ":status", Value: "103"}), ok...), frame(frameData, []byte("abc"))...), false)
	f.Add(append(append([]byte{}, ok...), frame(0x21, []byte("reserved"))...), true)
	f.Add(frame(frameData, []byte("x")), false)
	f.Add([]byte{0x01, 0x40}, false)
	f.Add(quicvarint.Append([]byte{0x01}, 1<<40+1), false)
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		resp, err := readResponse(bytes.NewReader(data), head)
		if err != nil {
			return
		}
		if resp.status < 200 || resp.status > 599 {
			t.Fatalf("accepted a response with status %d", resp.status)
		}
		if resp.bytes > int64(len(data)) {
			t.Fatalf("%d body bytes read from a stream of %d", resp.bytes, len(data))
		}
	})
}

// FuzzReadResponseRoundTrip builds a response from its parts with quic-go's QPACK encoder
// (interim responses, the final status, a Content-Length that may lie, the body in DATA
// frames of fuzzed sizes, frames of unknown types between them, a stream cut short) and
// holds the reader to exactly what was sent.
//
// Run: go test ./engine/h3 -run '^$' -fuzz FuzzReadResponseRoundTrip -fuzztime 60s
func FuzzReadResponseRoundTrip(f *testing.F) {
	f.Add(uint16(200), uint8(0), int16(10), []byte{4, 6}, uint8(0), false, uint16(0))
	f.Add(uint16(204), uint8(1), int16(5), []byte{}, uint8(0x21), false, uint16(0))
	f.Add(uint16(200), uint8(2), int16(-1), []byte{1, 2, 3}, uint8(0x3f), true, uint16(0))
	f.Add(uint16(200), uint8(0), int16(9), []byte{4, 6}, uint8(0), false, uint16(0))
	f.Add(uint16(500), uint8(0), int16(2), []byte{2}, uint8(0), false, uint16(3))
	f.Fuzz(func(t *testing.T, status uint16, interim uint8, clen int16, chunks []byte, unknown uint8, head bool, cut uint16) {
		if status < 200 || status > 599 || len(chunks) > 64 || interim > 4 {
			return
		}
		var stream []byte
		ends := map[int]bool{0: true} // where a frame ends: a stream cut there is a shorter whole
		for range interim {
			stream = append(stream, headersFrame(t, qpack.HeaderField{Name: ":status", Value: "103"})...)
			ends[len(stream)] = true
		}
		fields := []qpack.HeaderField{{Name: ":status", Value: strconv.Itoa(int(status))}, {Name: "kalab-conn", Value: "7"}}
		if clen >= 0 {
			fields = append(fields, qpack.HeaderField{Name: "content-length", Value: strconv.Itoa(int(clen))})
		}
		stream = append(stream, headersFrame(t, fields...)...)
		ends[len(stream)] = true
		body := 0
		for i, c := range chunks {
			stream = append(stream, frame(frameData, bytes.Repeat([]byte{'b'}, int(c)))...)
			body += int(c)
			ends[len(stream)] = true
			if unknown != 0 && unknown != frameData && unknown != frameHeaders && i == 0 {
				stream = append(stream, frame(uint64(unknown), []byte("skip me"))...)
				ends[len(stream)] = true
			}
		}
		whole := len(stream)
		if int(cut) > 0 && int(cut) < whole && !ends[whole-int(cut)] {
			stream = stream[:whole-int(cut)]
		}
		resp, err := readResponse(bytes.NewReader(stream), head)
		if len(stream) < whole {
			if err == nil {
				t.Fatalf("a stream cut %d bytes short was read as whole: %+v", cut, resp)
			}
			return
		}
		bodyless := head || status == 204 || status == 304
		lies := clen >= 0 && int(clen) != body && !bodyless
		switch {
		case lies && !errors.Is(err, io.ErrUnexpectedEOF):
			t.Fatalf("Content-Length %d with %d body bytes: err %v, want an unexpected end", clen, body, err)
		case lies:
		case err != nil:
			t.Fatalf("a well-formed response: %v", err)
		case resp.status != int(status) || resp.bytes != int64(body) || resp.serverConn != 7:
			t.Fatalf("read status %d, %d body bytes, conn %d; sent %d, %d, 7", resp.status, resp.bytes, resp.serverConn, status, body)
		}
	})
}
