package netsim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// startProxy starts a proxy in front of upstream and closes it at cleanup.
func startProxy(tb testing.TB, upstream string, rtt time.Duration) *Proxy {
	tb.Helper()
	p, err := Start(Config{Upstream: upstream, RTT: rtt, Lag: &lag.Recorder{}})
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	probe := lag.StartProbe(time.Millisecond)
	probes.Store(p, probe)
	tb.Cleanup(func() { probe.Stop(); probes.Delete(p) })
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return p
}

// tcpServer is a raw loopback listener whose connections go to handle, one
// goroutine each; cleanup closes the listener and waits for the handlers.
func tcpServer(tb testing.TB, handle func(c *net.TCPConn)) string {
	tb.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []*net.TCPConn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c)
			}()
		}
	}()
	tb.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// echo copies everything back and half-closes after the client's FIN.
func echo(c *net.TCPConn) {
	_, _ = io.Copy(c, c)
	_ = c.CloseWrite()
}

// dial connects to addr, failing the test on error, and closes at cleanup.
func dial(tb testing.TB, addr string) *net.TCPConn {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// testCert makes a self-signed ECDSA P-256 certificate for 127.0.0.1 and a
// pool that trusts it.
func testCert(tb testing.TB) (tls.Certificate, *x509.CertPool) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("generating key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "netsim test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("creating certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("parsing certificate: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// httpServer starts a loopback HTTP server (TLS 1.3 when tlsOn) answering
// every request with a short body, and returns its address and a client
// trust pool (nil for plain HTTP).
func httpServer(tb testing.TB, tlsOn bool) (string, *x509.CertPool) {
	tb.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	srv := httptest.NewUnstartedServer(h)
	var pool *x509.CertPool
	if tlsOn {
		var cert tls.Certificate
		cert, pool = testCert(tb)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
		srv.StartTLS()
	} else {
		srv.Start()
	}
	tb.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), pool
}

// httpClient returns a client for the proxy; keepAlive false opens a new
// connection for every request.
func httpClient(tb testing.TB, pool *x509.CertPool, keepAlive bool) *http.Client {
	tr := &http.Transport{
		DisableKeepAlives:   !keepAlive,
		MaxIdleConnsPerHost: 1,
		ForceAttemptHTTP2:   false,
	}
	if pool != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get performs one GET through the proxy and returns its latency.
func get(tb testing.TB, c *http.Client, scheme, addr string) time.Duration {
	tb.Helper()
	start := time.Now()
	resp, err := c.Get(scheme + "://" + addr + "/")
	if err != nil {
		tb.Fatalf("GET: %v", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		tb.Fatalf("reading body: %v", err)
	}
	return time.Since(start)
}

// isConnReset reports whether err is a TCP reset.
func isConnReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// within fails unless lo <= got <= hi.
// probes holds the wake-up probe startProxy started for each proxy.
var probes sync.Map // *Proxy -> *lag.Probe

// withinTrips is within for a span of the given number of modeled one-way trips through p.
// The upper bound widens, once per trip, by how late an independent goroutine woke from
// its sleeps meanwhile (the wake-up probe startProxy started beside p: the machine's
// scheduling, not the link under test); the link's own recorded lateness is what the test
// judges, so it only explains a failure, and never widens the bound or skips the test.
func withinTrips(tb testing.TB, p *Proxy, what string, got, lo, hi time.Duration, trips int) {
	tb.Helper()
	probe, _ := probes.Load(p)
	machine := probe.(*lag.Probe).Summary().Max
	hi += time.Duration(trips) * machine
	if got < lo || got > hi {
		testci.TimingMiss(tb, "%s = %v, want between %v and %v (widened by %d trips x %v, how late an independent goroutine woke); the link recorded its timers up to %v late",
			what, got, lo, hi, trips, machine, p.cfg.Lag.Summary().Max)
	}
}

func within(tb testing.TB, what string, got, lo, hi time.Duration) {
	tb.Helper()
	if got < lo || got > hi {
		testci.TimingMiss(tb, "%s = %v, want between %v and %v", what, got, lo, hi)
	}
}

// inStep runs workers goroutines at once: each calls open (its warm-up, such as opening its
// connection), all wait until every one has, then each calls the run open returned, and
// the latencies of every run are gathered. A nil run (open failed) measures nothing.
func inStep(workers int, open func(i int) (run func() []time.Duration)) []time.Duration {
	var (
		mu    sync.Mutex
		lat   []time.Duration
		wg    sync.WaitGroup
		ready sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range workers {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			run := open(i)
			ready.Done()
			if run == nil {
				return
			}
			<-start
			own := run()
			mu.Lock()
			lat = append(lat, own...)
			mu.Unlock()
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	return lat
}
