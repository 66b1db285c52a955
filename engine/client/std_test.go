package client

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A try that takes an idle connection reuses the last try's trace; a try that dials never
// hands its trace on, since the dial's hooks may still report into it after RoundTrip.
func TestStdTraceReusedOnlyWithoutADial(t *testing.T) {
	t.Parallel()
	const n = 50
	for _, keepAlive := range []bool{true, false} {
		srv := newRawServer(t, 0, okHandler)
		c := mustNew(t, Config{Implementation: ImplGoNetHTTP, Addr: srv.addr, KeepAlive: keepAlive})
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gcBefore := ms.NumGC
		for i := range n {
			if ev := do(t, c, i); !ev.OK() {
				t.Fatalf("keepalive %v, request %d: %s", keepAlive, i, ev.Error)
			}
		}
		built := c.(*stdClient).built.Load()
		runtime.ReadMemStats(&ms)
		// sync.Pool gives up what it holds across garbage collections (other tests run
		// beside this one): each collection may cost one more trace.
		gcs := int64(ms.NumGC - gcBefore)
		st := c.Stats()
		t.Logf("keepalive %v: %d traces built for %d requests over %d connections", keepAlive, built, n, st.Connections)
		switch {
		case keepAlive && st.Connections != 1:
			t.Errorf("keepalive: %d connections for %d requests; want 1", st.Connections, n)
		case keepAlive && raceEnabled:
			// sync.Pool drops a share of its objects under -race: only the count's ceiling holds.
			if built > n {
				t.Errorf("keepalive: %d traces for %d requests", built, n)
			}
		case keepAlive && built > 2+gcs:
			t.Errorf("keepalive: %d traces for %d requests over %d connection(s); want 1 connection and at most 2 traces (the first dials)", built, n, st.Connections)
		case !keepAlive && built != n:
			t.Errorf("no keepalive: %d traces for %d requests that each dialed; want one each", built, n)
		}
	}
}

// A try without a body or timeout sends the request its trace keeps for the trace's
// context: a try under another context must get a request carrying that context, or a
// cancelled caller would still be sent on the background one.
func TestStdKeptRequestFollowsTheContext(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, 0, okHandler)
	c := mustNew(t, Config{Implementation: ImplGoNetHTTP, Addr: srv.addr, KeepAlive: true})
	run, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for i := range 3 { // one context for all, as a run passes: the kept request is reused
		wantOK(t, c.Do(run, i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ev := c.Do(ctx, 3); ev.OK() {
		t.Fatalf("%+v: a request under a cancelled context was sent", ev)
	}
	for i := 4; i < 7; i++ {
		wantOK(t, c.Do(run, i))
	}
}
