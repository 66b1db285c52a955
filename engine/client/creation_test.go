package client

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// creationRun sends one request per entry of follows (true: it follows the previous one
// straight on, as the next request of an awaited loop), sleeping pause before the requests
// at the indexes in pauseBefore, and returns the events.
func creationRun(t *testing.T, c Client, follows []bool, pauseBefore map[int]bool, pause time.Duration) []Event {
	t.Helper()
	evs := make([]Event, len(follows))
	for i, f := range follows {
		if pauseBefore[i] {
			time.Sleep(pause)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if f {
			ctx = Following(ctx)
		}
		evs[i] = c.Do(ctx, i)
		cancel()
	}
	return evs
}

func connIDs(evs []Event) []uint64 {
	ids := make([]uint64, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ConnID
	}
	return ids
}

// An awaited loop alternates between two connections: the connection a request used comes
// free one tick after it ended, after the next request was dispatched to the next client in
// creation order; the first client is free again for the one after. A caller that yields
// (or a request that does not follow straight on) finds the first client free every time.
func TestCreationOrderAwaitedLoopAlternates(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, 0, okHandler)
	follows := []bool{false, true, true, true, true, true}
	cases := []struct {
		name string
		cfg  Config
		f    []bool
		want []uint64
	}{
		{"awaited loop", Config{Scheduling: Creation}, follows, []uint64{1, 2, 1, 2, 1, 2}},
		{"caller yields", Config{Scheduling: Creation, CallerYields: true}, follows, []uint64{1, 1, 1, 1, 1, 1}},
		{"paced requests", Config{Scheduling: Creation}, make([]bool, 6), []uint64{1, 1, 1, 1, 1, 1}},
		{"node agent (lifo)", Config{Scheduling: LIFO}, follows, []uint64{1, 1, 1, 1, 1, 1}},
	}
	for _, tc := range cases {
		cfg := tc.cfg
		cfg.Addr, cfg.KeepAlive, cfg.LivenessCheck = srv.addr, true, true
		evs := creationRun(t, mustNew(t, cfg), tc.f, nil, 0)
		for _, ev := range evs {
			wantOK(t, ev)
		}
		if got := connIDs(evs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: connections %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A client whose connection the server closed keeps its place: the next request goes to
// it and reconnects there, although the second client's connection is idle and alive
// (lifo and fifo would both reuse that live connection). On the virtual clock over vnet,
// the server's FIN is at the client before the pause ends.
func TestCreationOrderReconnectsInPlace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := newVNet(t)
		// The server closes connection 0 (FIN) right after answering its second request.
		srv := newVRawServer(t, n, 0, func(s *serverConn) bool {
			return s.reply("", "hello") == nil && !(s.conn == 0 && s.req == 1)
		})
		// r0 -> client A (conn 1); r1 follows -> B (conn 2); r2 -> A (conn 1, then the FIN);
		// r3 -> B (conn 2); after a pause, r4 -> A, whose connection is closed: conn 3 while
		// conn 2 idles; r5 follows r4 -> B (conn 2).
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, LivenessCheck: true, Scheduling: Creation})
		evs := creationRun(t, c, []bool{false, true, true, true, false, true}, map[int]bool{4: true}, 100*time.Millisecond)
		for _, ev := range evs {
			wantOK(t, ev)
		}
		if got, want := connIDs(evs), []uint64{1, 2, 1, 2, 3, 2}; !slices.Equal(got, want) {
			t.Errorf("connections %v, want %v", got, want)
		}
		if evs[4].Reused || !evs[5].Reused {
			t.Errorf("request 4 reused %v, request 5 reused %v; want a new connection in client A's place, then B's reused", evs[4].Reused, evs[5].Reused)
		}
	})
}

// A failed request frees its client at once (the socket's close listener resumes it
// synchronously), so the next request of the loop takes that client and reconnects: the
// one-tick hold is for a response that ended well.
func TestCreationOrderFailureFreesAtOnce(t *testing.T) {
	t.Parallel()
	// The server resets connection 0 when its second request arrives.
	srv := newRawServer(t, 0, func(s *serverConn) bool {
		if s.conn == 0 && s.req == 1 {
			s.reset()
			return false
		}
		return s.reply("", "hello") == nil
	})
	c := mustNew(t, Config{Addr: srv.addr, KeepAlive: true, LivenessCheck: true, Scheduling: Creation})
	evs := creationRun(t, c, []bool{false, true, true, true, true}, nil, 0)
	// r0 A conn 1; r1 B conn 2; r2 A conn 1 fails; r3 A again (freed at once): conn 3;
	// r4 follows a success on A: B, conn 2.
	if evs[2].OK() {
		t.Fatalf("request 2: %+v, want the reset", evs[2])
	}
	for _, i := range []int{0, 1, 3, 4} {
		wantOK(t, evs[i])
	}
	if got, want := connIDs(evs), []uint64{1, 2, 1, 3, 2}; !slices.Equal(got, want) {
		t.Errorf("connections %v, want %v", got, want)
	}
	if st := c.Stats(); st.Connections != 3 {
		t.Errorf("%d connections opened, want 3", st.Connections)
	}
}

// A response with Connection: close holds its client for the request that follows straight
// on, as a kept connection does (the drain comes with the socket's 'close' event, after the
// caller's continuations), and the client reconnects in place when a later request reaches
// it. A server that closes after n requests against 40 awaited requests: request i goes to
// client A when i is even and to B when odd, each connection carries n requests, so
// connection k+1 serves A's requests 2nk, 2nk+2, ... and k+2 B's: 40/n connections.
func TestCreationOrderResponseCloseHolds(t *testing.T) {
	t.Parallel()
	for _, n := range []int{5, 4} {
		synctest.Test(t, func(t *testing.T) {
			vn := newVNet(t)
			srv := newVRawServer(t, vn, 0, func(s *serverConn) bool {
				if s.req == n-1 {
					s.reply("Connection: close\r\n", "hello")
					return false
				}
				return s.reply("", "hello") == nil
			})
			c := mustNew(t, Config{Addr: srv.addr, Dial: vn.DialContext, KeepAlive: true, LivenessCheck: true, Scheduling: Creation})
			follows := make([]bool, 40)
			for i := 1; i < len(follows); i++ {
				follows[i] = true
			}
			evs := creationRun(t, c, follows, nil, 0)
			want := make([]uint64, len(evs))
			for i := range want {
				want[i] = uint64(2*(i/(2*n)) + 1 + i%2)
			}
			for _, ev := range evs {
				wantOK(t, ev)
			}
			if got := connIDs(evs); !slices.Equal(got, want) {
				t.Errorf("close after %d: connections %v, want %v", n, got, want)
			}
			if st := c.Stats(); st.Connections != int64(40/n) {
				t.Errorf("close after %d: %d connections opened, want %d", n, st.Connections, 40/n)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		vn := newVNet(t)
		// Connection 0 answers its second request with Connection: close.
		srv := newVRawServer(t, vn, 0, func(s *serverConn) bool {
			if s.conn == 0 && s.req == 1 {
				s.reply("Connection: close\r\n", "hello")
				return false
			}
			return s.reply("", "hello") == nil
		})
		// r0 A (1); r1 follows: B (2); r2 follows: A (1, closed); r3 follows: A held, B (2);
		// r4, sent after a pause: A, first in creation order, reconnects in place (3) while
		// B's connection 2 idles alive.
		c := mustNew(t, Config{Addr: srv.addr, Dial: vn.DialContext, KeepAlive: true, LivenessCheck: true, Scheduling: Creation})
		evs := creationRun(t, c, []bool{false, true, true, true, false}, map[int]bool{4: true}, 100*time.Millisecond)
		for _, ev := range evs {
			wantOK(t, ev)
		}
		if got, want := connIDs(evs), []uint64{1, 2, 1, 2, 3}; !slices.Equal(got, want) {
			t.Errorf("in place: connections %v, want %v", got, want)
		}
	})
}

func TestCreationOrderRejects(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Addr: "127.0.0.1:1", Scheduling: Creation, Implementation: ImplGoNetHTTP},
		{Addr: "127.0.0.1:1", Scheduling: Creation, HTTP2: true},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "creation-order") {
			t.Errorf("New(%+v): err %v, want a creation-order error", cfg, err)
		}
	}
}

// With max_conns 2 three requests at once: two clients, the third waits and takes the first
// client that comes free (pool-base.js kOnDrain), reusing its connection; with max_idle 1 a
// second idle connection is closed when it comes back, its slot kept empty, so the next
// request reconnects in it. On the virtual clock: requests sent at 0, 5 and 10 ms, each
// answered 30 ms after it arrives, end at 30, 35 and 60 ms (the third sent on client A's
// connection when the first ends at 30 ms).
func TestCreationOrderLimits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const serve = 30 * time.Millisecond
		n := newVNet(t)
		srv := newVRawServer(t, n, 0, func(s *serverConn) bool {
			time.Sleep(serve)
			return s.reply("", "hello") == nil
		})
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, LivenessCheck: true, Scheduling: Creation, MaxConns: 2})
		evs := make([]Event, 3)
		var wg sync.WaitGroup
		for i := range evs {
			wg.Go(func() { evs[i] = do(t, c, i) })
			time.Sleep(5 * time.Millisecond) // in order: 0 and 1 take the two clients, 2 waits
		}
		wg.Wait()
		for _, ev := range evs {
			wantOK(t, ev)
		}
		if st := c.Stats(); st.Connections != 2 || !evs[2].Reused || evs[2].ConnID != evs[0].ConnID || srv.maxOpen.Load() != 2 {
			t.Errorf("%d connections (server saw at most %d open), request 2 reused %v on connection %d; want 2, 2 and a reuse of request 0's connection %d",
				st.Connections, srv.maxOpen.Load(), evs[2].Reused, evs[2].ConnID, evs[0].ConnID)
		}
		// Latency runs from each request's own start: 0, 5 and 10 ms.
		if got, want := []time.Duration{evs[0].Latency, evs[1].Latency, evs[2].Latency}, []time.Duration{serve, serve, 2*serve - 10*time.Millisecond}; !slices.Equal(got, want) {
			t.Errorf("latencies %v, want %v", got, want)
		}

		idle := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, LivenessCheck: true, Scheduling: Creation, MaxIdle: 1})
		// r0 A (1); r1 follows: B (2); r2 follows: A reused; r3 follows: B, which came back second
		// while A idled, so it was closed: B reconnects (3).
		got := connIDs(creationRun(t, idle, []bool{false, true, true, true}, nil, 0))
		if want := []uint64{1, 2, 1, 3}; !slices.Equal(got, want) {
			t.Errorf("max idle 1: connections %v, want %v", got, want)
		}
	})
}
