package probe

import (
	"context"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"time"
)

// Requests is what the probe found of the requests served on one connection.
type Requests struct {
	// Max is the number of requests after which the server closed the connection, when
	// Found; How says how it ended (its last response's Connection: close, or the next
	// request meeting a closed connection).
	Found bool
	Max   int
	How   string
	// Sent is how many requests were answered on the connection; when not Found the
	// server served all of them (the budget, --max-requests) without closing.
	Sent    int
	Limited string
}

// requestsPerConn sends up to MaxRequests requests back to back on one connection and
// reports after which one the server closed it.
func (p *prober) requestsPerConn(ctx context.Context) Requests {
	var r Requests
	c, err := p.dial(ctx)
	if err != nil {
		r.Limited = err.Error()
		return r
	}
	defer c.close()
	for r.Sent < p.opt.MaxRequests {
		if ctx.Err() != nil {
			r.Limited = "time budget spent"
			return r
		}
		resp, err := p.roundTrip(c)
		if err != nil {
			if r.Sent > 0 && (kind(err) == KindFIN || kind(err) == KindRST) {
				r.Found, r.Max = true, r.Sent
				r.How = "request " + strconv.Itoa(r.Sent+1) + " met a closed connection (" + kind(err) + "), without a Connection: close before it"
				return r
			}
			r.Limited = "request " + strconv.Itoa(r.Sent+1) + " failed: " + err.Error()
			return r
		}
		r.Sent++
		if resp.close {
			r.Found, r.Max = true, r.Sent
			r.How = "response " + strconv.Itoa(r.Sent) + " said Connection: close"
			return r
		}
	}
	return r
}

// Hint is a Keep-Alive response header as sent.
type Hint struct {
	Raw     string        // the header's value, "" when the server sent none
	Timeout time.Duration // its timeout=, 0 when absent
	Max     int           // its max=, 0 when absent
}

// parseHint reads "timeout=N, max=M" (RFC 2068 19.7.1.1, as Node and Apache write it).
func parseHint(v string) Hint {
	h := Hint{Raw: v}
	for part := range strings.SplitSeq(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 0 {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "timeout":
			h.Timeout = time.Duration(n) * time.Second
		case "max":
			h.Max = n
		}
	}
	return h
}

// alpn opens one TLS connection offering h2 and http/1.1 and reports whether the server
// chose h2 and, if it did, the SETTINGS_MAX_CONCURRENT_STREAMS of its first SETTINGS frame
// (0 when it sent none: unlimited by RFC 9113 6.5.2).
func (p *prober) alpn(ctx context.Context) (bool, int) {
	conf := p.tlsConf.Clone()
	conf.NextProtos = []string{"h2", "http/1.1"}
	saved := p.tlsConf
	p.tlsConf = conf
	c, err := p.dial(ctx)
	p.tlsConf = saved
	if err != nil || c.tls.NegotiatedProtocol != "h2" {
		if c != nil {
			c.close()
		}
		return false, 0
	}
	defer c.close()
	_ = c.c.SetDeadline(time.Now().Add(p.opt.RequestTimeout))
	// The client preface and an empty SETTINGS frame (RFC 9113 3.4, 6.5).
	_, _ = io.WriteString(c.c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	var hdr [9]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil || hdr[3] != 0x4 {
		return true, 0
	}
	n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	body := make([]byte, min(n, 1<<14))
	if _, err := io.ReadFull(c.br, body); err != nil {
		return true, 0
	}
	for i := 0; i+6 <= len(body); i += 6 {
		if binary.BigEndian.Uint16(body[i:]) == 0x3 {
			return true, int(binary.BigEndian.Uint32(body[i+2:]))
		}
	}
	return true, 0
}
