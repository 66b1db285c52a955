package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/kalab-dev/kalab/engine/client/wire"
)

// Pool is the model client's connection pool used as a library, for a hop that forwards
// requests it did not write itself (a balancer's backend side). It keeps every behaviour
// of the model client: idle timeout from response arrival, max idle, max connections,
// lifo/fifo reuse, the liveness check, and visible retries counted per attempt.
type Pool struct {
	m *model
}

// Request is one forwarded request.
type Request struct {
	Method  string // HTTP method; default GET
	Path    string // origin-form path; default /
	Body    []byte // request body, sent with a Content-Length
	Headers map[string]string
	// Fresh makes the first attempt open a new connection instead of reusing an idle one
	// (HAProxy "http-reuse safe" for the first request of a client connection).
	Fresh bool
}

// NewPool builds a pool from a Config. Only the model implementation over HTTP/1.1 can
// forward arbitrary requests; Method, Path and Headers of cfg are the defaults of Request.
func NewPool(cfg Config) (*Pool, error) {
	if cfg.Implementation == ImplGoNetHTTP || cfg.HTTP2 {
		return nil, errors.New("client config: a pool forwards HTTP/1.1 with the model implementation only")
	}
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	return &Pool{m: newModel(cfg)}, nil
}

// Send forwards one request, retrying under the Config's RetryPolicy, where a request is
// idempotent unless its method is POST, LOCK or PATCH (nginx's rule for
// proxy_next_upstream since 1.9.13). It never returns an error: failures are data in the
// Event, whose Attempts count the re-sends.
func (p *Pool) Send(ctx context.Context, seq int, r Request) Event {
	if r.Method == "" {
		r.Method = "GET"
	}
	if r.Path == "" {
		r.Path = "/"
	}
	raw, err := p.render(r)
	if err != nil {
		return Event{Seq: seq, Attempts: 1, Class: ClassOther, Error: err.Error()}
	}
	return p.m.do(ctx, seq, sendOpts{req: raw, idempotent: ProxyIdempotent(r.Method), head: r.Method == "HEAD", fresh: r.Fresh})
}

// ProxyIdempotent is nginx's test for passing a failed request to the next upstream: every
// method but POST, LOCK and PATCH (ngx_http_upstream.c, "non_idempotent", 1.9.13).
func ProxyIdempotent(method string) bool {
	switch method {
	case "POST", "LOCK", "PATCH":
		return false
	}
	return true
}

func (p *Pool) render(r Request) ([]byte, error) {
	if !wire.IsToken(r.Method) {
		return nil, fmt.Errorf("method %q: not an HTTP token", r.Method)
	}
	if len(r.Path) == 0 || r.Path[0] != '/' || wire.ContainsAnyByte(r.Path, " \r\n\t") {
		return nil, fmt.Errorf("path %q: want an origin-form path", r.Path)
	}
	b := make([]byte, 0, 128+len(r.Body))
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, r.Path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, p.m.cfg.Addr...)
	b = append(b, "\r\n"...)
	for k, v := range r.Headers {
		if !wire.IsToken(k) || wire.ContainsAnyByte(v, "\r\n") {
			continue
		}
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	if len(r.Body) > 0 || r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(r.Body)), 10)
		b = append(b, "\r\n"...)
	}
	if !p.m.cfg.KeepAlive {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, r.Body...)
	return b, nil
}

// Stats returns the pool's cumulative counters.
func (p *Pool) Stats() Stats { return p.m.Stats() }

// Close closes idle connections and makes busy ones close when their request ends.
func (p *Pool) Close() error { return p.m.Close() }

var _ io.Closer = (*Pool)(nil)

// CloseReasons says why the pool closed each connection it closed itself (CloseReasoner).
func (p *Pool) CloseReasons() map[uint64]string { return p.m.CloseReasons() }
