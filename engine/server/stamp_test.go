package server

import (
	"crypto/x509"
	"net/http"
	"sync"
	"testing"
)

// A stamped response names its connection and the request's index on it; the hook sees
// the same numbers. Two connections, three requests on the first.
func TestStampConnectionAndIndex(t *testing.T) {
	var mu sync.Mutex
	var seen [][2]int64
	s := start(t, Config{TLS: true, Stamp: true, OnRequest: func(r *http.Request, conn, n int64) {
		mu.Lock()
		seen = append(seen, [2]int64{conn, n})
		mu.Unlock()
	}})
	a, b := dialRaw(t, s), dialRaw(t, s)
	want := []struct {
		rc         *rawClient
		conn, nreq string
	}{{a, "1", "1"}, {a, "1", "2"}, {b, "2", "1"}, {a, "1", "3"}}
	for i, w := range want {
		resp, _, _, err := w.rc.do("")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := resp.Header.Get(ConnHeader); got != w.conn {
			t.Errorf("request %d: %s = %q, want %q", i, ConnHeader, got, w.conn)
		}
		if got := resp.Header.Get(ConnRequestHeader); got != w.nreq {
			t.Errorf("request %d: %s = %q, want %q", i, ConnRequestHeader, got, w.nreq)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 || seen[3] != [2]int64{1, 3} || seen[2] != [2]int64{2, 1} {
		t.Errorf("OnRequest saw %v, want [[1 1] [1 2] [2 1] [1 3]]", seen)
	}
	// The PEM form trusts the same certificate as RootCAs.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CAPEM()) {
		t.Fatalf("CAPEM is not a PEM certificate: %q", s.CAPEM())
	}
}

// Without Stamp the headers are absent: the model runs' bytes on the wire do not change.
func TestNoStampByDefault(t *testing.T) {
	s := start(t, Config{})
	resp, _, _, err := dialRaw(t, s).do("")
	if err != nil {
		t.Fatal(err)
	}
	if v := resp.Header.Get(ConnHeader); v != "" {
		t.Errorf("%s = %q without Stamp", ConnHeader, v)
	}
}
