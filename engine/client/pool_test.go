package client

import (
	"context"
	"testing"
)

func TestProxyIdempotent(t *testing.T) {
	t.Parallel()
	for m, want := range map[string]bool{"GET": true, "HEAD": true, "PUT": true, "DELETE": true, "OPTIONS": true, "POST": false, "PATCH": false, "LOCK": false} {
		if got := ProxyIdempotent(m); got != want {
			t.Errorf("ProxyIdempotent(%s) = %v, want %v", m, got, want)
		}
	}
}

func TestPoolRejects(t *testing.T) {
	t.Parallel()
	if _, err := NewPool(Config{Addr: "127.0.0.1:1", Implementation: ImplGoNetHTTP}); err == nil {
		t.Error("a go-net-http pool was built")
	}
	p, err := NewPool(Config{Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, r := range []Request{{Method: "GE T"}, {Path: "no-slash"}, {Path: "/a b"}} {
		if ev := p.Send(context.Background(), 0, r); ev.OK() || ev.Class != ClassOther {
			t.Errorf("Send(%+v) = %+v; want a failure of class other before any dial", r, ev)
		}
	}
	if st := p.Stats(); st.Connections != 0 {
		t.Errorf("a bad request dialed: %+v", st)
	}
}

// Fresh skips the idle connection for the first attempt only.
func TestPoolFresh(t *testing.T) {
	t.Parallel()
	addr := newRawServer(t, 0, okHandler).addr
	p, err := NewPool(Config{Addr: addr, KeepAlive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, r := range []Request{{}, {}, {Fresh: true}, {Method: "POST"}} {
		ev := p.Send(context.Background(), i, r)
		if !ev.OK() || ev.Status != 200 {
			t.Fatalf("request %d: %+v", i, ev)
		}
		wantReused := i == 1 || i == 3
		if ev.Reused != wantReused {
			t.Errorf("request %d: reused %v, want %v", i, ev.Reused, wantReused)
		}
	}
	if st := p.Stats(); st.Connections != 2 {
		t.Errorf("%d connections, want 2 (one fresh by request)", st.Connections)
	}
}
