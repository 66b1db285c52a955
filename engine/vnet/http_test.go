package vnet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// selfSigned mints a certificate for localhost and 127.0.0.1 valid around
// time.Now (the bubble's clock) and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestTLS13(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cert, pool := selfSigned(t)
		cl, sv := connect(t, n)
		srvErr := make(chan error, 1)
		go func() {
			s := tls.Server(sv, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
			defer s.Close()
			b := make([]byte, 4)
			if _, err := io.ReadFull(s, b); err != nil {
				srvErr <- err
				return
			}
			if string(b) != "ping" {
				srvErr <- fmt.Errorf("server read %q", b)
				return
			}
			_, err := s.Write([]byte("pong"))
			srvErr <- err
		}()
		c := tls.Client(cl, &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS13})
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		if v := c.ConnectionState().Version; v != tls.VersionTLS13 {
			t.Fatalf("version %x", v)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(c) // pong, then close_notify
		if err != nil || string(b) != "pong" {
			t.Fatalf("client read %q, %v", b, err)
		}
		if err := <-srvErr; err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
}

func TestHTTPKeepAliveAndIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		l, err := n.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var closedAt []time.Time
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "ok "+r.RemoteAddr)
			}),
			IdleTimeout: 2 * time.Second,
			ConnState: func(c net.Conn, s http.ConnState) {
				if s == http.StateClosed {
					mu.Lock()
					closedAt = append(closedAt, time.Now())
					mu.Unlock()
				}
			},
		}
		go srv.Serve(l)
		tr := &http.Transport{DialContext: n.DialContext, IdleConnTimeout: time.Minute}
		client := &http.Client{Transport: tr}
		get := func() (body string, reused bool) {
			t.Helper()
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+l.Addr().String()+"/", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return string(b), reused
		}
		start := time.Now()
		for i := range 3 {
			body, reused := get()
			if body != "ok 127.0.0.1:40000" || reused != (i > 0) {
				t.Fatalf("request %d: %q reused=%v", i, body, reused)
			}
			synctest.Wait() // the connection is back in the idle pool
		}
		time.Sleep(3 * time.Second)
		mu.Lock()
		if len(closedAt) != 1 || closedAt[0].Sub(start) != 2*time.Second {
			t.Fatalf("server closed conns at %v (start %v)", closedAt, start)
		}
		mu.Unlock()
		wantStats(t, n, Stats{Dials: 1, Accepted: 1, Open: 0, ActiveCloses: 1, ActiveClosesAccept: 1})
		body, reused := get()
		if body != "ok 127.0.0.1:40001" || reused {
			t.Fatalf("request after idle timeout: %q reused=%v", body, reused)
		}
		wantStats(t, n, Stats{Dials: 2, Accepted: 2, Open: 1, ActiveCloses: 1, ActiveClosesAccept: 1})
		tr.CloseIdleConnections()
		srv.Close()
	})
}

func TestHTTP2OverTLS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cert, pool := selfSigned(t)
		l, _ := n.Listen("")
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(10 * time.Millisecond)
				fmt.Fprintf(w, "%s %s", r.Proto, r.URL.Path)
			}),
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		}
		go srv.ServeTLS(l, "", "")
		tr := &http.Transport{
			DialContext:       n.DialContext,
			ForceAttemptHTTP2: true,
			TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: "localhost"},
		}
		client := &http.Client{Transport: tr}
		url := "https://" + l.Addr().String()
		get := func(path string) (string, error) {
			resp, err := client.Get(url + path)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
		if b, err := get("/first"); err != nil || b != "HTTP/2.0 /first" {
			t.Fatalf("first: %q, %v", b, err)
		}
		start := time.Now()
		const k = 100
		var wg sync.WaitGroup
		errs := make([]error, k)
		for i := range k {
			wg.Go(func() {
				path := fmt.Sprintf("/%d", i)
				b, err := get(path)
				if err == nil && b != "HTTP/2.0 "+path {
					err = fmt.Errorf("body %q", b)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		// All streams ran at once on the one connection.
		if d := time.Since(start); d != 10*time.Millisecond {
			t.Fatalf("%d concurrent requests took %v", k, d)
		}
		if s := n.Stats(); s.Dials != 1 || s.Accepted != 1 {
			t.Fatalf("Stats = %+v", s)
		}
		tr.CloseIdleConnections()
		srv.Close()
	})
}

// scenario runs echo exchanges whose clients start at distinct virtual instants and
// returns a trace of what both sides saw.
func scenario(t *testing.T) []string {
	var trace []string
	synctest.Test(t, func(t *testing.T) {
		n := New()
		var events atomic.Int64
		n.SetOnEvent(func() { events.Add(1) })
		var mu sync.Mutex
		start := time.Now()
		logf := func(format string, a ...any) {
			mu.Lock()
			trace = append(trace, fmt.Sprintf("%6dms ", time.Since(start).Milliseconds())+fmt.Sprintf(format, a...))
			mu.Unlock()
		}
		l, _ := n.Listen("")
		var server sync.WaitGroup
		server.Go(func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				server.Go(func() {
					defer c.Close()
					b, err := io.ReadAll(c)
					logf("server %v read %q %v", c.RemoteAddr(), b, err)
					time.Sleep(5 * time.Millisecond)
					_, err = c.Write(b)
					logf("server %v write %v", c.RemoteAddr(), err)
				})
			}
		})
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 20 * time.Millisecond)
				c, err := n.Dial(context.Background(), l.Addr().String())
				if err != nil {
					logf("dial %d: %v", i, err)
					return
				}
				fmt.Fprintf(c, "msg %d", i)
				if i%3 == 2 {
					c.Abort()
					logf("client %d aborted", i)
					return
				}
				c.CloseWrite()
				b, err := io.ReadAll(c)
				logf("client %d %v read %q %v", i, c.LocalAddr(), b, err)
				c.Close()
			})
		}
		wg.Wait()
		time.Sleep(time.Second) // let the server finish the last exchange
		l.Close()
		server.Wait()
		n.Close()
		mu.Lock()
		trace = append(trace, fmt.Sprintf("stats %+v events %d", n.Stats(), events.Load()))
		mu.Unlock()
	})
	// Lines of one instant may come from different goroutines in any order.
	slices.Sort(trace[:len(trace)-1])
	return trace
}

func TestDeterminism(t *testing.T) {
	a, b := scenario(t), scenario(t)
	if !slices.Equal(a, b) {
		t.Fatalf("traces differ:\n%q\n%q", a, b)
	}
	if len(a) != 19 {
		t.Fatalf("trace has %d lines:\n%q", len(a), a)
	}
	for _, l := range a {
		t.Log(l)
	}
}
