package oracle

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pairs is an awaited loop over undici's creation-order pool worked by hand: plain TCP at
// 100 ms RTT, a server that closes after 1 s idle (the race window is (900, 1000) ms),
// two bursts of two requests and one pause. Burst 0: request 0 opens client 0 (connect
// and request, 200 ms), request 1 finds client 0 held for it and opens client 1 (200 ms).
// Burst 1: request 2 goes to client 0, idle for the pause plus request 1's 200 ms;
// request 3 to client 1, idle for the pause plus request 2's time.
func pairs(pause time.Duration) Plan {
	return Plan{
		Requests: 4, Burst: 2, RTT: 100 * ms1, Pauses: []time.Duration{pause},
		Server: Server{IdleTimeout: time.Second},
		Client: Client{KeepAlive: true, LivenessCheck: true, AwaitedCreationOrder: true, Method: "GET"},
	}
}

func reach(t *testing.T, p Plan, s Slack) []Outcome {
	t.Helper()
	out, err := Reach(p, s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// slackAt is a slack of d before request n alone.
func slackAt(n int, d time.Duration) Slack {
	s := Slack{Before: make([]time.Duration, n+1)}
	s.Before[n] = d
	return s
}

func TestReachWorkedByHand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plan  Plan
		slack Slack
		want  []Outcome
	}{
		// Client 0 idles 690 + 200 = 890 ms, 10 ms below the window; client 1 690 + 100.
		{"no slack: the plan's one outcome", pairs(690 * ms1), Slack{}, []Outcome{{0, 2, 0}}},
		// 15 ms before request 2 puts client 0's gap anywhere in [890, 905]: it reuses, or
		// it races, fails (burst 1) and frees client 0 at once, so request 3 goes to client 0
		// again and reconnects there.
		{"slack across the edge: both ways, and the burst after", pairs(690 * ms1), slackAt(2, 15*ms1), []Outcome{{0, 2, 0}, {1, 3, 2}}},
		{"slack short of the edge: one way", pairs(690 * ms1), slackAt(2, 10*ms1), []Outcome{{0, 2, 0}}},
		// A margin widens both ways: 10 ms reaches 900 ms exactly, which still reuses (the
		// window is open at idle − RTT); 11 ms crosses it.
		{"a margin to the edge exactly", pairs(690 * ms1), Slack{Margin: 10 * ms1}, []Outcome{{0, 2, 0}}},
		{"a margin past the edge", pairs(690 * ms1), Slack{Margin: 11 * ms1}, []Outcome{{0, 2, 0}, {1, 3, 2}}},
		// A request's own slack lengthens its own gap: its bytes leave after its start.
		{"the request's own time", pairs(690 * ms1), Slack{During: []time.Duration{0, 0, 11 * ms1}}, []Outcome{{0, 2, 0}, {1, 3, 2}}},
		// Slack during request 1 lengthens client 0's gap (request 1 is inside it), not
		// client 1's own (it starts when request 1 ends).
		{"slack of a request inside the gap", pairs(690 * ms1), Slack{During: []time.Duration{0, 11 * ms1}}, []Outcome{{0, 2, 0}, {1, 3, 2}}},
		// A response read 11 ms after its bytes came: client 0's server started its idle
		// clock up to 11 ms before the program saw request 0 end.
		{"a response read late", pairs(690 * ms1), Slack{During: []time.Duration{11 * ms1}}, []Outcome{{0, 2, 0}, {1, 3, 2}}},
		// 810 ms: client 0 idles 1,010 ms, the FIN is in and the liveness check drops it
		// (a new connection, no error); client 1 then idles 810 + 200 ms: the same.
		{"past the close: both reconnect in place", pairs(810 * ms1), Slack{}, []Outcome{{0, 4, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reach(t, tc.plan, tc.slack); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Reach = %v, worked by hand %v", got, tc.want)
			}
		})
	}
}

// TestReachFollowsTheClientRules: the same schedule under other rules reaches other
// outcomes, so a compare through Reach tells the rules apart.
func TestReachFollowsTheClientRules(t *testing.T) {
	noLiveness := pairs(810 * ms1)
	noLiveness.Client.LivenessCheck = false
	// Client 0's gap of 1,010 ms is written onto the closed connection: request 2 fails,
	// client 0 is free at once and request 3 reconnects there.
	if got, want := reach(t, noLiveness, Slack{}), []Outcome{{1, 3, 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("without a liveness check: %v, want %v", got, want)
	}
	lifo := pairs(690 * ms1)
	lifo.Client.AwaitedCreationOrder = false
	// One connection, handed to each next request: every gap is the pause or nothing.
	if got, want := reach(t, lifo, Slack{}), []Outcome{{0, 1, 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("a pool that hands back the connection just returned: %v, want %v", got, want)
	}
}

// TestReachEqualsPredict: with no slack, Reach is the walk's nominal prediction, on the
// seeded race of scenarios/truth/undici.yaml (model-race-50: seed 7's pauses, TLS 1.3,
// 50 ms RTT, the server closing after 2 s idle, undici's 4 s keepAliveTimeout).
func TestReachEqualsPredict(t *testing.T) {
	p := Plan{
		Requests: 50, Burst: 5, RTT: 50 * ms1,
		Pauses: []time.Duration{1800718709, 1606792917, 1755073156, 1978898821, 2256423682, 2248718761, 2444857785, 1747057440, 2224523656},
		Server: Server{IdleTimeout: 2 * time.Second, TLS: "1.3"},
		Client: Client{KeepAlive: true, IdleTimeout: 4 * time.Second, LivenessCheck: true, AwaitedCreationOrder: true, Method: "GET"},
	}
	pred := Predict(p, 0)
	e, _ := pred.Count(Errors)
	c, _ := pred.Count(Connections)
	want := []Outcome{{Errors: e.Value, Connections: c.Value, FailedBursts: 1 << 4}}
	if got := reach(t, p, Slack{}); !reflect.DeepEqual(got, want) || e.Value != 1 || c.Value != 12 {
		t.Fatalf("Reach = %v, Predict %d errors (requests %v) and %d connections", got, e.Value, e.Requests, c.Value)
	}
	// 20 ms before every request: client 1's gap in burst 1 (the pause, 1,800.7 ms, and
	// requests 4 and 5, 50 ms each) lies in [1,900.7, 1,960.7] (requests 4, 5 and 6 began up
	// to 20 ms late each), across the window's start at 1,950: request 6 can race. Then
	// client 1 holds no connection, request 7 goes back to client 0 and request 8 reconnects
	// client 1 in place: one more connection, and burst 4 fails as before.
	s := Slack{}
	for range p.Requests {
		s.Before = append(s.Before, 20*ms1)
	}
	if got, also := reach(t, p, s), (Outcome{2, 13, 1<<1 | 1<<4}); !reflect.DeepEqual(got, append(want, also)) {
		t.Fatalf("at 20 ms a request: %v, want %v", got, append(want, also))
	}
}

func TestReachRefuses(t *testing.T) {
	inFlight := pairs(690 * ms1)
	inFlight.Concurrency = 2
	jitter := pairs(690 * ms1)
	jitter.Jitter = ms1
	for _, tc := range []struct {
		p    Plan
		want string
	}{
		{inFlight, "2 requests in flight"},
		{jitter, "jitter"},
	} {
		if _, err := Reach(tc.p, Slack{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Reach = %v, want an error saying %q", err, tc.want)
		}
	}
}

// TestReachGivesUpPastItsBudget: with every gap of a long run across an edge, the ways
// multiply past the walk's budget, and Reach says so rather than guess.
func TestReachGivesUpPastItsBudget(t *testing.T) {
	p := Plan{Requests: 60, Burst: 1, RTT: 100 * ms1, Server: Server{IdleTimeout: time.Second},
		Client: Client{KeepAlive: true, LivenessCheck: true, AwaitedCreationOrder: true, Method: "GET"}}
	s := Slack{}
	for range p.Requests - 1 {
		p.Pauses = append(p.Pauses, 850*ms1)
	}
	for n := range p.Requests {
		s.Before = append(s.Before, time.Duration(n+1)*7*time.Millisecond)
	}
	if _, err := Reach(p, s); !errors.Is(err, ErrTooManyWays) {
		t.Fatalf("Reach = %v, want ErrTooManyWays", err)
	}
}
