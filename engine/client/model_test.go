package client

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func mustNew(t testing.TB, cfg Config) Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t testing.TB, c Client, seq int) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Do(ctx, seq)
}

func wantOK(t testing.TB, ev Event) {
	t.Helper()
	if !ev.OK() || ev.Status != 200 {
		t.Fatalf("request %d: status %d class %q error %q", ev.Seq, ev.Status, ev.Class, ev.Error)
	}
}

// TestReuseUntilIdleTimeout runs on the virtual clock over vnet, where a request is
// served at the instant it is sent. An idle connection's lifetime of 800 ms runs from its
// last response: a request 1 ns before it ends reuses the connection and starts a new
// lifetime, and the client's timer closes the connection exactly 800 ms after that
// request's response.
func TestReuseUntilIdleTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const idle = 800 * time.Millisecond
		n := newVNet(t)
		srv := newVRawServer(t, n, 0, okHandler)
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, IdleTimeout: idle})

		first := do(t, c, 0)
		wantOK(t, first)
		// vnet has no delay: connecting and the response take no time.
		if first.Reused || first.ConnID != 1 || first.Connect != 0 || first.FirstByte != 0 || first.Latency != 0 || first.BytesRead != 5 {
			t.Fatalf("first request: %+v, want a new connection 1 with no phase time and 5 body bytes", first)
		}
		second := do(t, c, 1)
		wantOK(t, second)
		if !second.Reused || second.ConnID != 1 || second.Connect != 0 {
			t.Fatalf("second request right after the first: %+v, want connection 1 reused", second)
		}
		time.Sleep(idle - time.Nanosecond)
		third := do(t, c, 2)
		wantOK(t, third)
		if !third.Reused || third.ConnID != 1 {
			t.Fatalf("request 1 ns before the idle timeout: %+v, want connection 1 reused", third)
		}
		lastResponse := time.Now()

		time.Sleep(idle - time.Nanosecond)
		synctest.Wait()
		if n := srv.open.Load(); n != 1 {
			t.Fatalf("1 ns before the lifetime from the third response ends: server has %d open connections, want 1", n)
		}
		wantReasons(t, c, nil)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		// The client's timer closed the connection at the instant its lifetime ended, so
		// the server's side of it is gone.
		if n := srv.open.Load(); n != 0 || time.Since(lastResponse) != idle {
			t.Fatalf("%v after the third response: server has %d open connections, want 0 at exactly %v", time.Since(lastResponse), n, idle)
		}
		wantReasons(t, c, map[uint64]string{1: ReasonIdle})

		fourth := do(t, c, 3)
		wantOK(t, fourth)
		if fourth.Reused || fourth.ConnID != 2 {
			t.Fatalf("request after the idle timeout: %+v, want a new connection 2", fourth)
		}
		if st := c.Stats(); st.Connections != 2 || st.Retries != 0 {
			t.Fatalf("stats %+v, want 2 connections", st)
		}
		if n := srv.conns.Load(); n != 2 {
			t.Fatalf("server accepted %d connections, want 2", n)
		}
		c.Close()
		wantReasons(t, c, map[uint64]string{1: ReasonIdle, 2: ReasonEnd})
	})
}

// TestIdleLifetimeEndsAtItsInstant, on the virtual clock: a connection pooled for 800 ms is
// reused by a request 1 ns before its lifetime ends and replaced by one at the very
// instant it ends, whether the pool's timer or the request sees that instant first.
func TestIdleLifetimeEndsAtItsInstant(t *testing.T) {
	t.Parallel()
	const idle = 800 * time.Millisecond
	for _, tc := range []struct {
		after  time.Duration
		reused bool
		conn   uint64
	}{{idle - time.Nanosecond, true, 1}, {idle, false, 2}} {
		t.Run(tc.after.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newVNet(t)
				srv := newVRawServer(t, n, 0, okHandler)
				c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, IdleTimeout: idle})
				wantOK(t, do(t, c, 0))
				time.Sleep(tc.after)
				ev := do(t, c, 1)
				wantOK(t, ev)
				if ev.Reused != tc.reused || ev.ConnID != tc.conn {
					t.Fatalf("request %v after the response: %+v, want connection %d, reused %v", tc.after, ev, tc.conn, tc.reused)
				}
			})
		})
	}
}

// wantReasons checks why the client says it closed each connection it closed itself.
func wantReasons(t *testing.T, c Client, want map[uint64]string) {
	t.Helper()
	if got := c.(CloseReasoner).CloseReasons(); !maps.Equal(got, want) {
		t.Fatalf("close reasons %v, want %v", got, want)
	}
}

func TestKeepAliveOffSendsCloseAndNeverReuses(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, 0, okHandler)
	c := mustNew(t, Config{Addr: srv.addr, KeepAlive: false})
	for i := range 3 {
		ev := do(t, c, i)
		wantOK(t, ev)
		if ev.Reused || ev.ConnID != uint64(i+1) {
			t.Fatalf("request %d: %+v, want new connection %d", i, ev, i+1)
		}
	}
	if !strings.Contains(srv.lastHead(), "Connection: close\r\n") {
		t.Fatalf("request head %q lacks Connection: close", srv.lastHead())
	}
	wantReasons(t, c, map[uint64]string{1: ReasonKeepAliveOff, 2: ReasonKeepAliveOff, 3: ReasonKeepAliveOff})
}

func TestHintPerprofile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		preset, header string
		idle           time.Duration // override of the preset's idle timeout, 0 = keep
		pooled         bool
		life           time.Duration // 0 = no idle limit
	}{
		{"node-agent", "timeout=1", 0, false, 0},
		{"undici", "timeout=2", 0, false, 0},
		{"node-agent", "timeout=5", 0, true, 0}, // no agent timeout: the hint cannot shorten it
		{"node-global-agent", "timeout=5", 0, true, 4 * time.Second},
		{"node-agent", "max=100, timeout=5", 0, true, 0}, // anchored regex: not read
		{"undici", "max=100, timeout=5", 0, true, 3 * time.Second},
		{"undici", "timeout=10", 0, true, 8 * time.Second},            // replaces the 4 s default
		{"node-global-agent", "timeout=10", 0, true, 5 * time.Second}, // only shortens
		{"node-global-agent", "timeout=3", 0, true, 2 * time.Second},
		{"python-requests", "timeout=1", 0, true, 0}, // not read at all
	}
	for _, tc := range cases {
		t.Run(tc.preset+"/"+tc.header, func(t *testing.T) {
			t.Parallel()
			srv := newRawServer(t, 0, func(s *serverConn) bool {
				return s.reply("Keep-Alive: "+tc.header+"\r\n", "ok") == nil
			})
			cfg, err := profile(tc.preset)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Addr = srv.addr
			c := mustNew(t, cfg)
			wantOK(t, do(t, c, 0))
			m := c.(*model)
			m.mu.Lock()
			var life time.Duration
			idle := len(m.idle)
			if idle == 1 {
				life = m.idle[0].life
			}
			m.mu.Unlock()
			if tc.pooled != (idle == 1) || life != tc.life {
				t.Fatalf("pooled %v with lifetime %v, want pooled %v with %v", idle == 1, life, tc.pooled, tc.life)
			}
			second := do(t, c, 1)
			wantOK(t, second)
			if second.Reused != tc.pooled {
				t.Fatalf("second request reused=%v, want %v", second.Reused, tc.pooled)
			}
		})
	}
}

// twoIdle, inside a synctest bubble, leaves two idle connections in the pool, freed in a
// known order: both requests are in flight at once, so both dial, and the server answers
// the connection it accepted first at 100 ms, the second at 200 ms. It returns their ids
// oldest first, as the pool holds them, and checks that order against the events.
func twoIdle(t *testing.T, scheduling string) (Client, [2]uint64) {
	n := newVNet(t)
	srv := newVRawServer(t, n, 0, func(s *serverConn) bool {
		time.Sleep(time.Duration(s.conn+1) * 100 * time.Millisecond)
		return okHandler(s)
	})
	c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, Scheduling: scheduling})
	var wg sync.WaitGroup
	evs := make([]Event, 2)
	for i := range evs {
		wg.Go(func() { evs[i] = do(t, c, i) })
	}
	wg.Wait()
	byEnd := map[time.Duration]uint64{}
	for _, ev := range evs {
		wantOK(t, ev)
		byEnd[ev.Latency] = ev.ConnID
	}
	m := c.(*model)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.idle) != 2 {
		t.Fatalf("%d idle connections, want 2", len(m.idle))
	}
	ids := [2]uint64{m.idle[0].id, m.idle[1].id}
	if want := [2]uint64{byEnd[100*time.Millisecond], byEnd[200*time.Millisecond]}; ids != want {
		t.Fatalf("idle connections %v oldest first, want %v: the ones whose requests ended at 100 and 200 ms", ids, want)
	}
	return c, ids
}

// TestSchedulingPicksDifferentIdleConnections, on the virtual clock: of two idle
// connections, lifo reuses the one freed last and fifo the one freed first.
func TestSchedulingPicksDifferentIdleConnections(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		lifo, lifoIDs := twoIdle(t, LIFO)
		fifo, fifoIDs := twoIdle(t, FIFO)
		l, f := do(t, lifo, 2), do(t, fifo, 2)
		wantOK(t, l)
		wantOK(t, f)
		if !l.Reused || l.ConnID != lifoIDs[1] {
			t.Fatalf("lifo reused connection %d, want the most recently freed %d (freed order %v)", l.ConnID, lifoIDs[1], lifoIDs)
		}
		if !f.Reused || f.ConnID != fifoIDs[0] {
			t.Fatalf("fifo reused connection %d, want the least recently freed %d (freed order %v)", f.ConnID, fifoIDs[0], fifoIDs)
		}
	})
}

// TestMaxConnsQueuesTheRest, on the virtual clock: six requests at once over at most two
// connections, each answered 100 ms after it arrives, go in three rounds: two end at
// 100 ms, two at 200 and two at 300, the last four on the two connections reused.
func TestMaxConnsQueuesTheRest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const delay = 100 * time.Millisecond
		n := newVNet(t)
		srv := newVRawServer(t, n, 0, func(s *serverConn) bool {
			time.Sleep(delay)
			return okHandler(s)
		})
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, MaxConns: 2})
		start := time.Now()
		var wg sync.WaitGroup
		events := make([]Event, 6)
		for i := range events {
			wg.Go(func() { events[i] = do(t, c, i) })
		}
		wg.Wait()
		reused := 0
		var ends []time.Duration
		for _, ev := range events {
			wantOK(t, ev)
			if ev.Reused {
				reused++
			}
			ends = append(ends, ev.Latency)
		}
		slices.Sort(ends)
		if want := []time.Duration{delay, delay, 2 * delay, 2 * delay, 3 * delay, 3 * delay}; !slices.Equal(ends, want) || time.Since(start) != 3*delay {
			t.Fatalf("requests ended after %v (all by %v), want %v", ends, time.Since(start), want)
		}
		if st := c.Stats(); st.Connections != 2 || reused != 4 {
			t.Fatalf("%d connections and %d reused requests, want 2 and 4", st.Connections, reused)
		}
		if m := srv.maxOpen.Load(); m != 2 {
			t.Fatalf("server saw %d connections open at once, want 2", m)
		}
	})
}

// TestMaxIdleClosesTheSurplus, on the virtual clock: three requests at once, answered
// at 50, 100 and 150 ms (by the server's accept order). With MaxIdle 1 the first
// connection freed stays idle, and each later one is closed at the instant its
// response ends.
func TestMaxIdleClosesTheSurplus(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const step = 50 * time.Millisecond
		n := newVNet(t)
		srv := newVRawServer(t, n, 0, func(s *serverConn) bool {
			time.Sleep(time.Duration(s.conn+1) * step)
			return okHandler(s)
		})
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, MaxIdle: 1})
		start := time.Now()
		var wg sync.WaitGroup
		evs := make([]Event, 3)
		for i := range evs {
			wg.Go(func() { evs[i] = do(t, c, i) })
		}
		// The server's count of open connections just after each response.
		for k, want := range []int64{3, 2, 1} {
			time.Sleep(time.Until(start.Add(time.Duration(k+1) * step)))
			synctest.Wait()
			if got := srv.open.Load(); got != want {
				t.Fatalf("at %v the server has %d open connections, want %d", time.Since(start), got, want)
			}
		}
		wg.Wait()
		m := c.(*model)
		m.mu.Lock()
		idle, open := len(m.idle), m.open
		kept := uint64(0)
		if idle == 1 {
			kept = m.idle[0].id
		}
		m.mu.Unlock()
		if idle != 1 || open != 1 {
			t.Fatalf("%d idle, %d open, want 1 and 1", idle, open)
		}
		want := map[uint64]string{}
		for _, ev := range evs {
			wantOK(t, ev)
			if ev.Latency == step {
				if ev.ConnID != kept {
					t.Fatalf("kept connection %d, want %d, the one freed first", kept, ev.ConnID)
				}
				continue
			}
			want[ev.ConnID] = ReasonTooManyIdle
		}
		wantReasons(t, c, want)
	})
}

// TestPoolStaysBounded checks that the pool's memory does not grow with the number of
// requests: after 2,000 requests from 8 goroutines it holds at most 8 connections.
func TestPoolStaysBounded(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, 0, okHandler)
	c := mustNew(t, Config{Addr: srv.addr, KeepAlive: true})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				if ev := do(t, c, g*250+i); !ev.OK() {
					t.Errorf("request: %s", ev.Error)
					return
				}
			}
		}()
	}
	wg.Wait()
	m := c.(*model)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.idle) > 8 || m.open > 8 || len(m.waiters) != 0 || cap(m.idle) > 16 {
		t.Fatalf("pool holds idle=%d (cap %d) open=%d waiters=%d, want at most 8 connections", len(m.idle), cap(m.idle), m.open, len(m.waiters))
	}
}

func TestCloseFailsLaterRequests(t *testing.T) {
	t.Parallel()
	for _, impl := range []string{ImplModel, ImplGoNetHTTP} {
		srv := newRawServer(t, 0, okHandler)
		c := mustNew(t, Config{Implementation: impl, Addr: srv.addr, KeepAlive: true})
		wantOK(t, do(t, c, 0))
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		ev := do(t, c, 1)
		if ev.OK() || ev.Class != ClassOther || !strings.Contains(ev.Error, "closed") {
			t.Fatalf("%s after Close: %+v, want a failure", impl, ev)
		}
	}
}

// TestCancelledContext, on the virtual clock: a caller's cancel at 200 ms interrupts a
// blocked read at that instant, the request is not retried, and the interrupted
// connection is not pooled.
func TestCancelledContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := newVNet(t)
		srv := newVRawServer(t, n, 0, func(s *serverConn) bool {
			if s.conn == 0 && s.req == 1 {
				io.Copy(io.Discard, s) // hangs until the client closes
				return false
			}
			return okHandler(s)
		})
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true,
			Retry: RetryPolicy{Attempts: 3, On: Classes}})
		wantOK(t, do(t, c, 0))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		ev := c.Do(ctx, 1)
		if ev.OK() || ev.Attempts != 1 || ev.Class != ClassTimeout || ev.Latency != 200*time.Millisecond {
			t.Fatalf("%+v, want one attempt timed out at exactly 200ms", ev)
		}
		next := do(t, c, 2)
		wantOK(t, next)
		if next.Reused {
			t.Fatalf("%+v: the interrupted connection was reused", next)
		}
		wantReasons(t, c, map[uint64]string{1: ReasonBroken})
	})
}

// TestQueueWaitEndsWithTheCaller, on the virtual clock: a request queued behind MaxConns
// gives up at the instant its context ends, 300 ms, and says what it was waiting for;
// the request it waited for ends when the server is released, at that same instant.
func TestQueueWaitEndsWithTheCaller(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		n := newVNet(t)
		srv := newVRawServer(t, n, 0, func(s *serverConn) bool {
			<-release
			return okHandler(s)
		})
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, MaxConns: 1})
		done := make(chan Event)
		go func() { done <- do(t, c, 0) }()
		synctest.Wait() // the first request holds the only slot
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		ev := c.Do(ctx, 1)
		close(release)
		first := <-done
		if ev.OK() || ev.Class != ClassTimeout || !strings.Contains(ev.Error, "max_conns") || ev.Latency != 300*time.Millisecond {
			t.Fatalf("queued request: %+v, want a timeout at exactly 300ms while waiting for max_conns", ev)
		}
		wantOK(t, first)
		if first.Latency != 300*time.Millisecond {
			t.Fatalf("first request ended after %v, want 300ms, when the server was released", first.Latency)
		}
		if next := do(t, c, 2); !next.OK() || !next.Reused {
			t.Fatalf("after the queue emptied: %+v, want the one connection reused", next)
		}
	})
}

func Exampleprofile() {
	cfg, _ := profile("undici")
	fmt.Println(cfg.IdleTimeout, cfg.HintParser, cfg.HintBuffer)
	// Output: 4s undici 2s
}

// TestHintLifetime, on the virtual clock: Keep-Alive: timeout=2 with a 1 s buffer shortens
// the global agent's 5 s timeout to 1 s from the response: reused 1 ns before, replaced at
// exactly 1 s. An agent with no timeout of its own (new Agent({keepAlive: true})) keeps
// the same socket (here up to 9 s: the test server closes a connection idle for 10 s).
func TestHintLifetime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		preset string
		after  time.Duration
		reused bool
	}{
		{"node-global-agent", time.Second - time.Nanosecond, true},
		{"node-global-agent", time.Second, false},
		{"node-agent", time.Second, true},
		{"node-agent", 9 * time.Second, true},
	} {
		t.Run(tc.preset+"/"+tc.after.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newVNet(t)
				srv := newVRawServer(t, n, 0, func(s *serverConn) bool { return s.reply("Keep-Alive: timeout=2\r\n", "ok") == nil })
				cfg, _ := profile(tc.preset)
				cfg.Addr, cfg.Dial = srv.addr, n.DialContext
				c := mustNew(t, cfg)
				wantOK(t, do(t, c, 0))
				time.Sleep(tc.after)
				if ev := do(t, c, 1); !ev.OK() || ev.Reused != tc.reused {
					t.Fatalf("%+v after %v: reused %v, want %v", ev, tc.after, ev.Reused, tc.reused)
				}
			})
		})
	}
}
