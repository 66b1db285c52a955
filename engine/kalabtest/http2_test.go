package kalabtest

import (
	"context"
	"crypto/tls"
	"math"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// The clone of the caller's Transport speaks HTTP/2 exactly when the caller's would have:
// Go turns HTTP/2 on by itself only for a Transport with no TLSClientConfig, no dialer and
// no TLSNextProto (net/http transport.go, (*Transport).protocols), and kalab sets the first
// two.
func TestCloneKeepsHTTP2Choice(t *testing.T) {
	tc := &tls.Config{}
	for _, c := range []struct {
		name string
		tr   http.RoundTripper
		want bool
	}{
		{"nil: http.DefaultTransport", nil, true},
		{"zero Transport", &http.Transport{}, true},
		{"own TLS config", &http.Transport{TLSClientConfig: &tls.Config{}}, false},
		{"own TLS config, forced", &http.Transport{TLSClientConfig: &tls.Config{}, ForceAttemptHTTP2: true}, true},
		{"HTTP/2 turned off", &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}, false},
		{"Protocols with HTTP/2", &http.Transport{TLSClientConfig: &tls.Config{}, Protocols: protocols(true)}, true},
		{"Protocols without", &http.Transport{Protocols: protocols(false)}, false},
	} {
		o := &options{hc: &http.Client{Transport: c.tr}}
		tr, err := o.clone(tc)
		if err != nil {
			t.Fatal(err)
		}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) { return nil, nil }
		got := tr.TLSNextProto == nil && (tr.ForceAttemptHTTP2 || tr.Protocols != nil && tr.Protocols.HTTP2())
		if got != c.want {
			t.Errorf("%s: HTTP/2 attempted %v, want %v", c.name, got, c.want)
		}
	}
}

// A caller's Transport that attempts HTTP/2 gets it from an HTTP/2 server over the run's
// in-memory network, by ALPN with the run's certificate.
func TestHTTP2OverTheRunsNetwork(t *testing.T) {
	var mu sync.Mutex
	protos := map[string]int{}
	build := func(tc *tls.Config, dial DialFunc) http.RoundTripper {
		// http.DefaultTransport's settings, dialing the run: the default client's bytes.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig, tr.DialContext, tr.Proxy = tc, dial, nil
		return &recording{tr: tr, seen: func(proto string) {
			mu.Lock()
			protos[proto]++
			mu.Unlock()
		}}
	}
	sc := Scenario{Name: "h2", RTT: 10 * time.Millisecond, Server: Server{TLS: true, HTTP2: true},
		Load: Load{Requests: 5}, Expect: []string{"errors == 0", "connections == 1"}}
	h2 := Run(t, sc, Transport(build))[0]
	if protos["HTTP/2.0"] != 5 || len(protos) != 1 {
		t.Errorf("responses by protocol: %v, want 5 over HTTP/2.0", protos)
	}
	h1 := Run(t, sc, Transport(func(tc *tls.Config, dial DialFunc) http.RoundTripper {
		return &http.Transport{TLSClientConfig: tc, DialContext: dial}
	}))[0]
	if h1.Metrics.BytesDown == h2.Metrics.BytesDown {
		t.Fatalf("HTTP/1.1 and HTTP/2 runs both read %v bytes: the bytes do not tell the protocol", h1.Metrics.BytesDown)
	}
	// kalabtest.Client: the caller's Transport as it is configured reads the bytes of the
	// protocol it would speak. Which end's TLS goodbye goes first when the client closes its
	// connection at the run's end is the scheduler's choice (one record, 22-24 bytes, either
	// way): the protocol is the one whose run's bytes are the nearer, 356 bytes apart here.
	for _, c := range []struct {
		name string
		tr   http.RoundTripper
		h2   bool
	}{
		{"default", nil, true},
		{"own TLS config", &http.Transport{TLSClientConfig: &tls.Config{}}, false},
	} {
		r := Run(t, sc, Client(&http.Client{Transport: c.tr}))[0]
		d := r.Metrics.BytesDown
		if isH2 := math.Abs(d-h2.Metrics.BytesDown) < math.Abs(d-h1.Metrics.BytesDown); isH2 != c.h2 {
			t.Errorf("Client, %s: %v bytes down, HTTP/2 %v; want HTTP/2 %v (an HTTP/2 run read %v, an HTTP/1.1 run %v)", c.name, d, isH2, c.h2, h2.Metrics.BytesDown, h1.Metrics.BytesDown)
		}
	}
}

func protocols(h2 bool) *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(h2)
	return &p
}

// recording notes each response's protocol; it closes its Transport's idle connections when
// kalab closes the client at the run's end (their TLS goodbyes count in the bytes).
type recording struct {
	tr   *http.Transport
	seen func(proto string)
}

func (r *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.tr.RoundTrip(req)
	if err == nil {
		r.seen(resp.Proto)
	}
	return resp, err
}

func (r *recording) CloseIdleConnections() { r.tr.CloseIdleConnections() }
