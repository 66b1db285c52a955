package probe

import (
	"context"
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
		t0 := time.Now()
		resp, err := p.roundTrip(c)
		if err == nil && r.Sent > 0 {
			p.mu.Lock()
			p.warm = append(p.warm, time.Since(t0))
			p.mu.Unlock()
		}
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
