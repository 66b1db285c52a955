package probe

import (
	"context"
	"encoding/binary"
	"errors"
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

// h2conn is one HTTP/2 connection of the probe.
type h2conn struct {
	*conn
	p          *prober
	maxStreams int
	goaway     []byte // the first GOAWAY's payload, nil before one
}

// errNoH2 is h2Dial's answer when the server chose http/1.1.
var errNoH2 = errors.New("the server chose http/1.1")

// h2Dial opens a TLS connection offering h2 and http/1.1 and, when the server chooses h2,
// sends the client preface and an empty SETTINGS frame (RFC 9113 3.4, 6.5).
func (p *prober) h2Dial(ctx context.Context) (*h2conn, error) {
	conf := p.tlsConf.Clone()
	conf.NextProtos = []string{"h2", "http/1.1"}
	c, err := p.dialConf(ctx, conf)
	if err != nil {
		return nil, err
	}
	if c.tls.NegotiatedProtocol != "h2" {
		c.close()
		return nil, errNoH2
	}
	out := appendFrame([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), h2Settings, 0, 0, nil)
	if _, err := c.c.Write(out); err != nil {
		c.close()
		return nil, err
	}
	return &h2conn{conn: c, p: p}, nil
}

// request sends a GET (or HEAD) as stream id and reads frames until its end.
func (h *h2conn) request(id uint32) error {
	h.p.mu.Lock()
	h.p.requests++
	h.p.mu.Unlock()
	_ = h.c.SetDeadline(time.Now().Add(h.p.opt.RequestTimeout))
	if _, err := h.c.Write(appendFrame(nil, h2Headers, h2EndStream|h2EndHeaders, id, h.p.hpackRequest())); err != nil {
		return err
	}
	for {
		typ, flags, stream, payload, err := readFrame(h.conn)
		if err != nil {
			return err
		}
		if err := h.handle(typ, flags, stream, payload); err != nil {
			return err
		}
		if h.goaway != nil && binary.BigEndian.Uint32(h.goaway)&0x7fffffff < id {
			return fmt.Errorf("GOAWAY before stream %d", id)
		}
		if stream == id && (typ == h2Headers || typ == h2Data) && flags&h2EndStream != 0 {
			h.done = time.Now()
			return nil
		}
	}
}

// handle answers what the connection needs answered: the server's SETTINGS (read for its
// stream limit, then acknowledged), DATA (its window given back), PING (echoed); and
// keeps the first GOAWAY.
func (h *h2conn) handle(typ, flags byte, stream uint32, payload []byte) error {
	var out []byte
	switch typ {
	case h2Settings:
		if flags&h2Ack != 0 {
			return nil
		}
		for i := 0; i+6 <= len(payload); i += 6 {
			if binary.BigEndian.Uint16(payload[i:]) == 0x3 {
				h.maxStreams = int(binary.BigEndian.Uint32(payload[i+2:]))
			}
		}
		out = appendFrame(nil, h2Settings, h2Ack, 0, nil)
	case h2Data:
		if len(payload) == 0 {
			return nil
		}
		inc := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
		out = append(appendFrame(nil, h2WindowUpdate, 0, 0, inc), appendFrame(nil, h2WindowUpdate, 0, stream, inc)...)
	case h2Ping:
		if flags&h2Ack != 0 || len(payload) != 8 {
			return nil
		}
		out = appendFrame(nil, h2Ping, h2Ack, 0, payload)
	case h2GoAway:
		if h.goaway == nil && len(payload) >= 8 {
			h.goaway = payload
		}
		return nil
	default:
		return nil
	}
	_, err := h.c.Write(out)
	return err
}

// h2Probe sends one request on an HTTP/2 connection, when the server chooses h2, and then
// reads, idle, until the server sends GOAWAY and closes, MaxIdle passes or ctx ends (Run
// ends it a while after the HTTP/1.1 close).
func (p *prober) h2Probe(ctx context.Context) H2 {
	c, err := p.h2Dial(ctx)
	if err == errNoH2 {
		return H2{}
	} else if err != nil {
		return H2{Err: err.Error()}
	}
	defer c.close()
	h := H2{Offered: true}
	if err := c.request(1); err != nil {
		h.Err = "the HTTP/2 request: " + err.Error()
		return h
	}
	h.MaxStreams = c.maxStreams
	_ = c.c.SetDeadline(c.done.Add(p.opt.MaxIdle))
	for {
		typ, flags, stream, payload, err := readFrame(c.conn)
		at := time.Since(c.done)
		if err != nil {
			switch k := kind(err); {
			case ctx.Err() != nil || k == KindTimeout:
				h.Above = at // still open when the wait ended
			default:
				h.Found, h.Close, h.Kind = true, at, k
			}
			return h
		}
		if typ == h2GoAway && c.goaway == nil && len(payload) >= 8 {
			h.GoAway, h.GoAwayErr = max(at, 1), binary.BigEndian.Uint32(payload[4:8])
		}
		_ = c.handle(typ, flags, stream, payload)
	}
}

// H2Streams is what the probe found of the streams one HTTP/2 connection serves.
type H2Streams struct {
	// Found: the server sent GOAWAY after Max streams (the last it answered); else Sent
	// streams were answered without one (--max-requests).
	Found   bool
	Max     int
	Sent    int
	Limited string
}

// h2Streams sends up to MaxRequests requests one after another on one HTTP/2 connection
// and reports after how many the server sent GOAWAY (nginx's keepalive_requests).
func (p *prober) h2Streams(ctx context.Context) H2Streams {
	var r H2Streams
	c, err := p.h2Dial(ctx)
	if err != nil {
		if err != errNoH2 {
			r.Limited = err.Error()
		}
		return r
	}
	defer c.close()
	for r.Sent < p.opt.MaxRequests {
		if ctx.Err() != nil {
			r.Limited = "time budget spent"
			return r
		}
		if err := c.request(uint32(2*r.Sent + 1)); err != nil {
			if c.goaway != nil {
				break
			}
			r.Limited = fmt.Sprintf("stream %d failed: %v", r.Sent+1, err)
			return r
		}
		r.Sent++
		if c.goaway != nil {
			break
		}
	}
	if c.goaway != nil {
		r.Found, r.Max = true, r.Sent
	}
	return r
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
