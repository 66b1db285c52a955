package client

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestErrorClassesFromRealSockets produces each class from a real socket condition, through
// both implementations.
func TestErrorClassesFromRealSockets(t *testing.T) {
	t.Parallel()
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are the point
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)

	cases := []struct {
		name    string
		handle  func(s *serverConn) bool // nil: the address comes from addr
		addr    func(t *testing.T) string
		tls     bool
		timeout time.Duration
		want    ErrorClass
		body    int64
	}{
		{name: "server reset", want: ClassReset, handle: func(s *serverConn) bool { s.reset(); return false }},
		{name: "FIN mid-response", want: ClassEOF, body: 10, handle: func(s *serverConn) bool {
			io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
			return false
		}},
		{name: "FIN before any byte", want: ClassEOF, handle: func(s *serverConn) bool { return false }},
		{name: "slow server", want: ClassTimeout, timeout: 200 * time.Millisecond, handle: func(s *serverConn) bool {
			io.Copy(io.Discard, s) // never answers; ends when the client gives up
			return false
		}},
		{name: "closed port", want: ClassRefused, addr: closedPort},
		{name: "untrusted certificate", want: ClassTLS, tls: true, addr: func(*testing.T) string { return untrusted.Listener.Addr().String() }},
	}
	for _, impl := range []string{ImplModel, ImplGoNetHTTP} {
		for _, tc := range cases {
			t.Run(impl+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var addr string
				if tc.addr != nil {
					addr = tc.addr(t)
				} else {
					addr = newRawServer(t, 0, tc.handle).addr
				}
				c := mustNew(t, Config{Implementation: impl, Addr: addr, KeepAlive: true, TLS: tc.tls,
					RootCAs: x509.NewCertPool(), Timeout: tc.timeout})
				ev := do(t, c, 0)
				if ev.Class != tc.want || ev.Error == "" || ev.Attempts != 1 {
					t.Fatalf("class %q (%q) after %d attempts, want %q", ev.Class, ev.Error, ev.Attempts, tc.want)
				}
				if ev.BytesRead != tc.body {
					t.Fatalf("read %d body bytes, want %d", ev.BytesRead, tc.body)
				}
				if tc.timeout > 0 && ev.Latency < tc.timeout {
					t.Fatalf("timed out after %v, before the %v timeout", ev.Latency, tc.timeout)
				}
			})
		}
	}
}

func TestClassifyWrapped(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want ErrorClass
	}{
		{nil, ClassNone},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), ClassReset},
		{&net.OpError{Op: "write", Err: syscall.EPIPE}, ClassReset},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), ClassEOF},
		{io.EOF, ClassEOF},
		{errors.New("http: server closed idle connection"), ClassEOF},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), ClassRefused},
		{x509.UnknownAuthorityError{}, ClassTLS},
		{errors.New("something else"), ClassOther},
	}
	for _, tc := range cases {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	// The original text is kept: a wrapped error keeps its cause's words.
	if !strings.Contains(fmt.Errorf("x: %w", syscall.ECONNRESET).Error(), "connection reset") {
		t.Fatal("wrapping lost the cause text")
	}
}
