package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// start starts a server for one test and closes it when the test ends, failing the
// test if Close reports an error.
func start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// rawClient is a minimal HTTP/1.1 client on one connection, so tests see exactly
// which headers the server sent and when the connection ended.
type rawClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, s *Server) *rawClient {
	t.Helper()
	var c net.Conn
	var err error
	d := &net.Dialer{Timeout: 5 * time.Second}
	if s.RootCAs() != nil {
		c, err = tls.DialWithDialer(d, "tcp", s.Addr(), &tls.Config{RootCAs: s.RootCAs(), ServerName: s.ServerName()})
	} else {
		c, err = d.Dial("tcp", s.Addr())
	}
	if err != nil {
		t.Fatalf("dialing %s: %v", s.Addr(), err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{c: c, br: bufio.NewReader(c)}
}

// do sends one GET with extra header lines (each ending in \r\n) and reads the whole
// response. It returns the response, its body and the time the last byte arrived.
func (rc *rawClient) do(extra string) (*http.Response, []byte, time.Time, error) {
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(rc.c, "GET / HTTP/1.1\r\nHost: kalab\r\n%s\r\n", extra); err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("writing request: %w", err)
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("reading response: %w", err)
	}
	body, err := io.ReadAll(resp.Body)
	done := time.Now()
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("reading body: %w", err)
	}
	return resp, body, done, nil
}

func (rc *rawClient) mustDo(t testing.TB, extra string) (*http.Response, []byte, time.Time) {
	t.Helper()
	resp, body, at, err := rc.do(extra)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body, at
}

// waitEOF blocks until the server ends the connection and returns when that was seen.
// It fails on a reset or on data, since an idle close must be a clean FIN.
func (rc *rawClient) waitEOF(t testing.TB, limit time.Duration) time.Time {
	t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(limit))
	var buf [1]byte
	n, err := rc.br.Read(buf[:])
	at := time.Now()
	if n > 0 {
		t.Fatalf("expected the connection to close, got data %q", buf[:n])
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("expected a clean close (EOF), got %v", err)
	}
	return at
}

// eventually polls cond until it holds or 5 s pass, for counters updated by the
// server's goroutines just after the client observed the event.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 5*time.Second, what, cond)
}

// eventuallyWithin is eventually with its own limit, for events that take several timers
// and goroutine hand-offs, which a loaded machine can stretch to seconds.
func eventuallyWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for deadline := start.Add(limit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting %v for %s", time.Since(start).Round(time.Millisecond), what)
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
