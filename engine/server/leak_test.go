package server

import (
	"crypto/tls"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestCloseLeavesNoGoroutines is not parallel: it counts every goroutine in the
// process, so it runs while no parallel test is active.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, cfg := range []Config{
		{TLS: true, HTTP2: true, IdleTimeout: time.Minute, SessionTickets: true, BodyBytes: 200},
		{HTTP2: true, IdleTimeout: time.Minute, Delay: 5 * time.Second},
		{IdleTimeout: time.Minute, MaxRequests: 2},
	} {
		s, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{ForceAttemptHTTP2: true}
		scheme := "http"
		if cfg.TLS {
			scheme = "https"
			tr.TLSClientConfig = &tls.Config{RootCAs: s.RootCAs(), ServerName: s.ServerName()}
		} else if cfg.HTTP2 {
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			tr.Protocols = &p
		}
		cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		if cfg.Delay > 0 {
			// Leave a stream in flight inside the handler's delay.
			go func() {
				if resp, err := cl.Get(scheme + "://" + s.Addr() + "/"); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			eventually(t, "a request in flight", func() bool { return s.Stats().Requests == 1 })
		} else {
			for range 3 {
				resp, err := cl.Get(scheme + "://" + s.Addr() + "/")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		rc := dialRaw(t, s) // one more connection, idle on HTTP/1.1 (or never used)
		if cfg.Delay == 0 {
			rc.mustDo(t, "")
		}
		t0 := time.Now()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// Only net/http's 500 ms linger after "Connection: close" may slow Close down.
		if d := time.Since(t0); d > 1500*time.Millisecond {
			t.Errorf("Close took %v", d)
		}
		if st := s.Stats(); st.Open != 0 {
			t.Errorf("Open = %d after Close", st.Open)
		}
		tr.CloseIdleConnections()
		rc.c.Close()
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "net/http") || strings.Contains(g, "engine/server") {
				leaked = append(leaked, g)
			}
		}
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, strings.Join(leaked, "\n\n"))
	}
}
