package client

import (
	"context"
	"testing"
)

// Retire: an idle connection is not reused after it, a busy one is not pooled after its
// response, and neither is closed by the pool; a connection dialled after it is pooled
// and reused as before.
func TestPoolRetire(t *testing.T) {
	t.Parallel()
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	srv := newRawServer(t, 0, func(s *serverConn) bool {
		if s.conn == 1 && s.req == 0 { // 0-based: the second connection's first request
			entered <- struct{}{}
			<-gate // connection 2's first response waits until the pool has retired it
		}
		return okHandler(s)
	})
	p, err := NewPool(Config{Addr: srv.addr, KeepAlive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(i int) Event {
		t.Helper()
		ev := p.Send(context.Background(), i, Request{})
		if !ev.OK() {
			t.Fatalf("request %d: %+v", i, ev)
		}
		return ev
	}
	if ev := send(1); ev.ConnID != 1 || ev.Reused {
		t.Fatalf("request 1: connection %d, reused %v", ev.ConnID, ev.Reused)
	}
	if err := p.Retire(); err != nil {
		t.Fatal(err)
	}
	// Connection 1 is idle and retired: request 2 dials connection 2, which the server
	// holds until the pool retires it too.
	done := make(chan Event, 1)
	go func() { done <- p.Send(context.Background(), 2, Request{}) }()
	select {
	case <-entered:
	case ev := <-done:
		close(gate)
		t.Fatalf("request 2: %+v; want it on a new connection 2, held by the server", ev)
	}
	if err := p.Retire(); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if ev := <-done; !ev.OK() || ev.ConnID != 2 || ev.Reused {
		t.Fatalf("request 2: %+v; want a new connection 2", ev)
	}
	// Connection 2 answered after it was retired: request 3 dials connection 3, and
	// request 4 reuses it.
	if ev := send(3); ev.ConnID != 3 || ev.Reused {
		t.Errorf("request 3: connection %d, reused %v; want a new connection 3", ev.ConnID, ev.Reused)
	}
	if ev := send(4); ev.ConnID != 3 || !ev.Reused {
		t.Errorf("request 4: connection %d, reused %v; want connection 3 again", ev.ConnID, ev.Reused)
	}
	// Retiring closes nothing: the server still holds all three connections open.
	if open := srv.open.Load(); open != 3 {
		t.Errorf("the server holds %d connections open, want 3 (retired ones stay open)", open)
	}
	if why := p.CloseReasons(); len(why) != 0 {
		t.Errorf("the pool closed connections itself: %v", why)
	}
}
