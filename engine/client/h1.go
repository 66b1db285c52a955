package client

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/client/wire"
)

// response is what the model client keeps from one HTTP/1.x response.
type response struct {
	status    int
	body      int64 // body bytes read
	keepAlive bool  // the server allows another request on this connection
	hint      time.Duration
	hasHint   bool
	server    uint64 // the Kalab-Conn header: the embedded server's connection id

	// What a kalab balancer says about the backend side of this request (its
	// Kalab-Backend-* headers); zero when the response did not cross one.
	backendConn     uint64
	backendAttempts int
	backendReused   bool
}

// Response headers a kalab balancer adds so that each client request record can name the
// backend connection that carried it (connection truth from what kalab controls).
const (
	HeaderBackendConn     = "Kalab-Backend-Conn"     // the balancer's id of the backend connection of the final attempt
	HeaderBackendAttempts = "Kalab-Backend-Attempts" // attempts the balancer made on the backend side
	HeaderBackendReused   = "Kalab-Backend-Reused"   // "1" when the final attempt reused a backend connection
)

var errMalformed = wire.ErrMalformed

// buildRequest renders the request once; every attempt writes the same bytes.
func buildRequest(cfg *Config) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", cfg.Method, cfg.Path)
	hasHost, hasUA := false, false
	for _, k := range cfg.sortedHeaderKeys() {
		hasHost = hasHost || strings.EqualFold(k, "Host")
		hasUA = hasUA || strings.EqualFold(k, "User-Agent")
	}
	if !hasHost {
		fmt.Fprintf(&b, "Host: %s\r\n", cfg.Addr)
	}
	if !hasUA {
		b.WriteString("User-Agent: kalab\r\n")
	}
	for _, k := range cfg.sortedHeaderKeys() {
		fmt.Fprintf(&b, "%s: %s\r\n", k, cfg.Headers[k])
	}
	switch {
	case cfg.BodyBytes > 0:
		fmt.Fprintf(&b, "Content-Length: %d\r\n", cfg.BodyBytes)
	case cfg.Method == "POST" || cfg.Method == "PUT" || cfg.Method == "PATCH":
		b.WriteString("Content-Length: 0\r\n")
	}
	if !cfg.KeepAlive {
		b.WriteString("Connection: close\r\n")
	} else if cfg.KeepAliveHeader {
		b.WriteString("Connection: keep-alive\r\n")
	}
	b.WriteString("\r\n")
	return append([]byte(b.String()), requestBody(cfg.BodyBytes)...)
}

// maxRequestBody bounds client.body_bytes, like the server's body.
const maxRequestBody = 64 << 20

// requestBody is the upload: n bytes of 'k'. The server reads and discards it.
func requestBody(n int) []byte { return bytes.Repeat([]byte{'k'}, n) }

// readResponse reads one response and discards its body, counting body bytes.
// It does not allocate on the common path.
func readResponse(br *bufio.Reader, cfg *Config, head bool) (response, error) {
	var r response
	first := true
	for {
		line, err := wire.ReadLine(br, first)
		if err != nil {
			return r, err
		}
		first = false
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' ||
			!wire.IsDigit(line[9]) || !wire.IsDigit(line[10]) || !wire.IsDigit(line[11]) {
			return r, fmt.Errorf("%w: status line %q", errMalformed, wire.Truncate(line))
		}
		r.status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
		// HTTP/1.1 "or later" persists by default, 1.0 does not (RFC 9112 section 9.3; a
		// minor version above 1 is read as net/http reads it, found by the differential fuzz).
		atLeast11 := line[7] >= '1' && line[7] <= '9'
		r.keepAlive = atLeast11
		contentLength, chunked, err := readHeaders(br, cfg, &r, atLeast11)
		if err != nil {
			return r, err
		}
		if r.status >= 100 && r.status < 200 && r.status != 101 {
			continue // interim response; the real one follows
		}
		n, untilClose, err := wire.DiscardBody(br, r.status, head, chunked, contentLength)
		r.body, r.keepAlive = n, r.keepAlive && !untilClose
		return r, err
	}
}

// readHeaders reads a response's header section into r and returns the body's framing: its
// Content-Length (-1 if none) and whether it is chunked.
func readHeaders(br *bufio.Reader, cfg *Config, r *response, atLeast11 bool) (contentLength int64, chunked bool, err error) {
	contentLength = -1
	for {
		h, err := wire.ReadLine(br, false)
		if err != nil {
			return 0, false, err
		}
		if len(h) == 0 {
			return contentLength, chunked, nil
		}
		colon := bytes.IndexByte(h, ':')
		if colon <= 0 {
			return 0, false, fmt.Errorf("%w: header line %q", errMalformed, wire.Truncate(h))
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case wire.EqualFold(name, "content-length"):
			n, ok := wire.ParseUint(value)
			if !ok {
				return 0, false, fmt.Errorf("%w: content-length %q", errMalformed, wire.Truncate(value))
			}
			contentLength = n
		case wire.EqualFold(name, "transfer-encoding"):
			// Ignored in HTTP/1.0, which has no transfer codings, as net/http does.
			chunked = atLeast11 && wire.ContainsFold(value, "chunked")
		default:
			recordHeader(cfg, r, name, value)
		}
	}
}

// recordHeader keeps in r what a header other than the body's framing says: Connection,
// the Keep-Alive hint (only when cfg honours it), Kalab-Conn and the Kalab-Backend-*
// headers. It ignores every other header and never fails.
func recordHeader(cfg *Config, r *response, name, value []byte) {
	switch {
	case wire.EqualFold(name, "connection"):
		if wire.ContainsFold(value, "close") {
			r.keepAlive = false
		} else if wire.ContainsFold(value, "keep-alive") {
			r.keepAlive = true
		}
	case wire.EqualFold(name, "kalab-conn"):
		n, _ := wire.ParseUint(value)
		r.server = uint64(n)
	case wire.EqualFold(name, "keep-alive"):
		if cfg.HonorHint {
			r.hint, r.hasHint = wire.ParseHint(value, cfg.HintParser == HintUndici)
		}
	case wire.EqualFold(name, "kalab-backend-conn"):
		if n, ok := wire.ParseUint(value); ok {
			r.backendConn = uint64(n)
		}
	case wire.EqualFold(name, "kalab-backend-attempts"):
		if n, ok := wire.ParseUint(value); ok && n < 1<<20 {
			r.backendAttempts = int(n)
		}
	case wire.EqualFold(name, "kalab-backend-reused"):
		r.backendReused = len(value) == 1 && value[0] == '1'
	}
}
