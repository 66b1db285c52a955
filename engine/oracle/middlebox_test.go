package oracle

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// natHole is a hand-sized black hole: a box that forgets a flow idle for 350 s (noticed
// within its 100 ms poll), a server that never closes, bursts of 2 and three pauses:
// 300 s (the flow lives), 400 s (forgotten: the first request after it is lost) and 500 s
// (forgotten again).
func natHole() Plan {
	return Plan{
		Requests: 8, Burst: 2,
		Pauses:    []time.Duration{300 * time.Second, 400 * time.Second, 500 * time.Second},
		Middlebox: &Middlebox{Name: "test-box", IdleTimeout: 350 * time.Second, Poll: 100 * ms1, Drop: true},
		Client:    Client{KeepAlive: true, Method: "GET"},
	}
}

// TestMiddleboxByHand works each variant of the box out by hand: requests 0-1 open and
// reuse connection 1; 2-3 reuse it after 300 s; 4 goes into the forgotten flow after 400 s
// (an error, sent on a pooled connection), 5 dials; 6 is lost after 500 s (sent on 5's
// connection), 7 dials. Reused: 1, 2, 3 and the two lost ones, 4 and 6.
func TestMiddleboxByHand(t *testing.T) {
	t.Parallel()
	got := Predict(natHole(), 0)
	check(t, "drop", got, want{Errors: 2, Connections: 3, ReusedRequests: 5, Retries: 0})
	if c, _ := got.Count(Errors); !slices.Equal(c.Requests, []int{4, 6}) || !strings.Contains(c.Reason, "hangs until the client's timeout") {
		t.Errorf("errors name %v (%q); want [4 6], lost to the box", c.Requests, c.Reason)
	}

	p := natHole()
	p.Middlebox.Drop, p.Middlebox.ResetNext = false, true
	p.Client.Retry = Retry{Attempts: 1, On: []string{"reset", "eof"}}
	// The box resets 4 and 6 at once; each is retried on a new connection the next reuses.
	check(t, "reset, one retry", Predict(p, 0), want{Errors: 0, Retries: 2, Connections: 3, ReusedRequests: 5})

	p = natHole()
	p.Client.KeepaliveIdle, p.Client.KeepaliveInterval = 60*time.Second, 60*time.Second
	check(t, "keepalive every 60 s", Predict(p, 0), want{Errors: 0, Connections: 1, ReusedRequests: 7})

	p = natHole()
	p.Client.KeepaliveIdle, p.Client.KeepaliveInterval = 60*time.Second, 400*time.Second
	// The first probe at 60 s refreshes the flow; the next comes too late: forgotten at
	// 410 s, so the 400 s pause still reuses and only the 500 s one is lost.
	check(t, "one probe", Predict(p, 0), want{Errors: 1, Connections: 2, ReusedRequests: 6})

	p = natHole()
	p.Client.IdleTimeout = 310 * time.Second // the client drops the idle connection itself after 400 s and 500 s
	check(t, "client idle 310 s", Predict(p, 0), want{Errors: 0, Connections: 3, ReusedRequests: 5})
}

// TestMiddleboxNotModelled: what the box model does not cover is said, never guessed.
func TestMiddleboxNotModelled(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		edit func(p *Plan)
		why  string
	}{
		"concurrency":       {func(p *Plan) { p.Concurrency = 2 }, "one request at a time"},
		"server idle close": {func(p *Plan) { p.Server.IdleTimeout = time.Minute }, "server also closes"},
		"reset at expiry":   {func(p *Plan) { p.Middlebox.Drop = false }, "at the expiry itself"},
		"timeout retried":   {func(p *Plan) { p.Client.Retry = Retry{Attempts: 1, On: []string{"timeout"}} }, "retries a timeout"},
		"pause in a poll":   {func(p *Plan) { p.Pauses[1] = 350*time.Second + 50*ms1 }, "within one of its"},
	} {
		p := natHole()
		c.edit(&p)
		got, _ := Predict(p, 0).Count(Errors)
		if got.Predicted || !strings.Contains(got.Reason, c.why) {
			t.Errorf("%s: predicted %v (%q); want not predicted, saying %q", name, got.Predicted, got.Reason, c.why)
		}
	}
}

// TestMiddleboxLateness: a run whose timers were up to 60 s late cannot tell whether its
// 300 s pause (up to 360 s) or its 400 s one (down to 340 s) outlasted the box's 350 s;
// only the 500 s one surely did: the bound on errors widens to 1..3, the nominal count stays 2.
func TestMiddleboxLateness(t *testing.T) {
	t.Parallel()
	c, _ := Predict(natHole(), 60*time.Second).Count(Errors)
	if !c.Predicted || c.Value != 2 || c.Lo != 1 || c.Hi != 3 {
		t.Errorf("errors %d (%d..%d), predicted %v; want 2 (1..3)", c.Value, c.Lo, c.Hi, c.Predicted)
	}
}
