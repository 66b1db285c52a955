package probe

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// H2 is what the probe found over HTTP/2, when the server chose h2 by ALPN: its stream
// limit and how it ends a connection left idle after one request.
type H2 struct {
	Offered    bool // the server chose h2 when offered h2 and http/1.1
	MaxStreams int  // SETTINGS_MAX_CONCURRENT_STREAMS, 0 when not sent (unlimited)
	// GoAway is when a GOAWAY arrived, after the stream's end (0: none seen), with its
	// error code; Close when the connection closed (Kind FIN or RST). Found is false when
	// neither came within MaxIdle (Above) or the probe could not run it (Err).
	Found     bool
	GoAway    time.Duration
	GoAwayErr uint32
	Close     time.Duration
	Kind      string
	Above     time.Duration
	Err       string
}

// HTTP/2 frame types and flags (RFC 9113 6).
const (
	h2Data, h2Headers, h2Settings, h2Ping, h2GoAway, h2WindowUpdate = 0x0, 0x1, 0x4, 0x6, 0x7, 0x8
	h2EndStream, h2Ack, h2EndHeaders                                = 0x1, 0x1, 0x4
)

// h2Probe opens one TLS connection offering h2 and http/1.1; when the server chooses h2 it
// sends one request as stream 1 and then reads, idle, until the server sends GOAWAY and
// closes, MaxIdle passes or ctx ends (Run ends it a while after the HTTP/1.1 close).
func (p *prober) h2Probe(ctx context.Context) H2 {
	conf := p.tlsConf.Clone()
	conf.NextProtos = []string{"h2", "http/1.1"}
	c, err := p.dialConf(ctx, conf)
	if err != nil {
		return H2{Err: err.Error()}
	}
	defer c.close()
	if c.tls.NegotiatedProtocol != "h2" {
		return H2{}
	}
	h := H2{Offered: true}
	_ = c.c.SetDeadline(time.Now().Add(p.opt.RequestTimeout))
	p.mu.Lock()
	p.requests++
	p.mu.Unlock()
	// The client preface, an empty SETTINGS frame and the request (RFC 9113 3.4, 6.5, 8.3).
	out := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	out = appendFrame(out, h2Settings, 0, 0, nil)
	out = appendFrame(out, h2Headers, h2EndStream|h2EndHeaders, 1, p.hpackRequest())
	if _, err := c.c.Write(out); err != nil {
		h.Err = err.Error()
		return h
	}
	if err := h.readResponse(c); err != nil {
		h.Err = "the HTTP/2 request: " + err.Error()
		return h
	}
	done := time.Now()
	_ = c.c.SetDeadline(done.Add(p.opt.MaxIdle))
	for {
		typ, _, _, payload, err := readFrame(c)
		at := time.Since(done)
		if err != nil {
			switch k := kind(err); {
			case ctx.Err() != nil || k == KindTimeout:
				h.Above = at // still open when the wait ended
			default:
				h.Found, h.Close, h.Kind = true, at, k
			}
			return h
		}
		if typ == h2GoAway && h.GoAway == 0 && len(payload) >= 8 {
			h.GoAway, h.GoAwayErr = max(at, 1), binary.BigEndian.Uint32(payload[4:8])
		}
		if typ == h2Ping && len(payload) == 8 {
			_, _ = c.c.Write(appendFrame(nil, h2Ping, h2Ack, 0, payload))
		}
	}
}

// readResponse reads frames until stream 1 ends, acknowledging the server's SETTINGS and
// giving back the window its DATA used.
func (h *H2) readResponse(c *conn) error {
	for {
		typ, flags, stream, payload, err := readFrame(c)
		if err != nil {
			return err
		}
		switch typ {
		case h2Settings:
			if flags&h2Ack == 0 {
				for i := 0; i+6 <= len(payload); i += 6 {
					if binary.BigEndian.Uint16(payload[i:]) == 0x3 {
						h.MaxStreams = int(binary.BigEndian.Uint32(payload[i+2:]))
					}
				}
				if _, err := c.c.Write(appendFrame(nil, h2Settings, h2Ack, 0, nil)); err != nil {
					return err
				}
			}
		case h2Data:
			if len(payload) > 0 {
				var inc [4]byte
				binary.BigEndian.PutUint32(inc[:], uint32(len(payload)))
				_, _ = c.c.Write(append(appendFrame(nil, h2WindowUpdate, 0, 0, inc[:]), appendFrame(nil, h2WindowUpdate, 0, stream, inc[:])...))
			}
		case h2GoAway:
			return fmt.Errorf("GOAWAY before the response")
		}
		if stream == 1 && (typ == h2Headers || typ == h2Data) && flags&h2EndStream != 0 {
			return nil
		}
	}
}

func appendFrame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream&0x7fffffff)
	return append(b, payload...)
}

// maxFrame bounds a frame the probe reads (the default SETTINGS_MAX_FRAME_SIZE, 16 KiB,
// which a server may not exceed unless the client raised it).
const maxFrame = 1 << 14

func readFrame(c *conn) (typ, flags byte, stream uint32, payload []byte, err error) {
	var hdr [9]byte
	if _, err = io.ReadFull(c.br, hdr[:]); err != nil {
		return
	}
	n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	if n > maxFrame {
		return 0, 0, 0, nil, fmt.Errorf("a frame of %d bytes, over the %d the client allows", n, maxFrame)
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(c.br, payload); err != nil {
		return
	}
	return hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff, payload, nil
}

// hpackRequest is the request's header block in HPACK (RFC 7541): indexed fields from
// the static table where they are there, literals without Huffman coding otherwise.
func (p *prober) hpackRequest() []byte {
	var b []byte
	if p.opt.Method == "GET" {
		b = append(b, 0x82) // :method GET (static index 2)
	} else {
		b = hpackLiteral(b, 2, p.opt.Method)
	}
	b = append(b, 0x87) // :scheme https (7)
	if p.t.path == "/" {
		b = append(b, 0x84) // :path / (4)
	} else {
		b = hpackLiteral(b, 4, p.t.path)
	}
	b = hpackLiteral(b, 1, p.t.host)          // :authority (1)
	return hpackLiteral(b, 58, "kalab-probe") // user-agent (58)
}

// hpackLiteral appends a literal field without indexing (RFC 7541 6.2.2) whose name is
// the static table's entry idx.
func hpackLiteral(b []byte, idx int, value string) []byte {
	b = hpackInt(b, 0x00, 4, idx)
	b = hpackInt(b, 0x00, 7, len(value))
	return append(b, value...)
}

// hpackInt appends v with an n-bit prefix (RFC 7541 5.1) under the pattern bits first.
func hpackInt(b []byte, first byte, n uint, v int) []byte {
	limit := 1<<n - 1
	if v < limit {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(limit))
	for v -= limit; v >= 128; v >>= 7 {
		b = append(b, byte(v%128+128))
	}
	return append(b, byte(v))
}
