package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
)

// conn is one probe connection: HTTP/1.1 written by hand over TCP or TLS, so that every
// close is seen as the socket reports it (no pool in between).
type conn struct {
	c   net.Conn
	br  *bufio.Reader
	tls *tls.ConnectionState
	// done is when the last response's last byte was read: where an idle gap starts.
	done time.Time
	stop func() bool // unregisters the context's wake-up
}

// maxBody bounds what is read of a response's body.
const maxBody = 8 << 20

// dial opens a connection within the budget, recording its connect (and handshake) time.
func (p *prober) dial(ctx context.Context) (*conn, error) { return p.dialConf(ctx, p.tlsConf) }

// dialConf is dial with the TLS configuration conf (nil: plain TCP).
func (p *prober) dialConf(ctx context.Context, conf *tls.Config) (*conn, error) {
	p.mu.Lock()
	if p.conns >= p.opt.MaxConns {
		p.mu.Unlock()
		return nil, errConnBudget
	}
	p.conns++
	p.mu.Unlock()
	t0 := time.Now()
	nc, err := p.opt.Dial(ctx, "tcp", p.t.addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", p.t.addr, err)
	}
	connect := time.Since(t0)
	c := &conn{c: nc}
	// A cancelled context wakes whatever the connection waits for.
	c.stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	var hs time.Duration
	if conf != nil {
		tc := tls.Client(nc, conf)
		t1 := time.Now()
		if err := tc.HandshakeContext(ctx); err != nil {
			c.close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", p.t.addr, err)
		}
		hs = time.Since(t1)
		st := tc.ConnectionState()
		c.c, c.tls = tc, &st
	}
	c.br = bufio.NewReader(c.c)
	p.mu.Lock()
	p.connects = append(p.connects, connect)
	if c.tls != nil {
		p.hands = append(p.hands, hs)
		if p.tlsConns > 0 && c.tls.DidResume {
			p.resumed++
		}
		p.tlsConns++
	}
	p.mu.Unlock()
	return c, nil
}

func (c *conn) close() {
	c.stop()
	_ = c.c.Close()
}

// response is what the probe keeps of an answer.
type response struct {
	status                           int
	proto, server, keepAlive, altSvc string
	close                            bool // the server said Connection: close
}

// roundTrip sends one request and reads its whole answer within the request timeout.
func (p *prober) roundTrip(c *conn) (*response, error) {
	p.mu.Lock()
	p.requests++
	p.mu.Unlock()
	_ = c.c.SetDeadline(time.Now().Add(p.opt.RequestTimeout))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kalab-probe\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n",
		p.opt.Method, p.t.path, p.t.host)
	if _, err := io.WriteString(c.c, req); err != nil {
		return nil, err
	}
	hr, err := http.ReadResponse(c.br, &http.Request{Method: p.opt.Method})
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(io.Discard, io.LimitReader(hr.Body, maxBody+1))
	_ = hr.Body.Close() // the body was read above, as far as the probe reads it: the copy's error is the one that counts
	if err != nil {
		return nil, err
	}
	if n > maxBody {
		return nil, fmt.Errorf("a response body over %d bytes: probe a smaller URL", maxBody)
	}
	c.done = time.Now()
	_ = c.c.SetDeadline(time.Time{})
	return &response{status: hr.StatusCode, proto: hr.Proto, server: hr.Header.Get("Server"),
		keepAlive: strings.Join(hr.Header.Values("Keep-Alive"), ", "), altSvc: strings.Join(hr.Header.Values("Alt-Svc"), ", "),
		close: hr.Close}, nil
}

// How a connection ended, as the socket reported it.
const (
	KindFIN     = "FIN"     // a read returned EOF: the server (or a box) closed in order
	KindRST     = "RST"     // a read or write failed with ECONNRESET (or EPIPE)
	KindTimeout = "timeout" // nothing came back within the wait
	KindData    = "data"    // the server sent bytes nobody asked for (an unsolicited 408)
	KindOther   = "error"
)

// kind classifies a read or write error.
func kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return KindFIN
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return KindRST
	case errors.Is(err, os.ErrDeadlineExceeded):
		return KindTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return KindTimeout
	}
	return KindOther
}

// watch holds the connection idle for gap after its last response, reading: it returns
// the kind of what arrived ("" for nothing) and when, measured from that response.
func (c *conn) watch(ctx context.Context, gap time.Duration) (string, time.Duration) {
	if fault.On(fault.ProbeIdleUnread) {
		time.Sleep(time.Until(c.done.Add(gap)))
		return "", time.Since(c.done)
	}
	_ = c.c.SetReadDeadline(c.done.Add(gap))
	if ctx.Err() != nil {
		return KindOther, 0
	}
	_, err := c.br.Peek(1)
	at := time.Since(c.done)
	if err == nil {
		return KindData, at
	}
	k := kind(err)
	if k == KindTimeout {
		if at < gap { // woken early: the context was cancelled
			return KindOther, at
		}
		return "", at
	}
	return k, at
}
