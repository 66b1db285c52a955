package runner

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// raceMargin is how far from an edge of the race window a pause must fall, in scenario
// time, for its outcome to be certain: at the stale-race file's time scale of 0.1 it is
// 1.5 ms of real time, the lateness a run may show before it counts as noisy (RTT/10 of its
// 15 ms real RTT). 10 ms of scenario time proved too tight: a CI rehearsal read 7 races at
// 1,900 ms where 4-6 were predicted.
const raceMargin = 15 * time.Millisecond

// predictRaces counts the pauses that put a burst's first request into the stale race on
// one kept-alive connection, in scenario time. After the burst's last response reached
// the client at C, the server (which wrote it RTT/2 earlier) closes at C - RTT/2 + idle;
// its FIN reaches the client at C + idle. The request sent at C + p arrives at C + p +
// RTT/2. It fails when it leaves before the FIN arrives and lands after the close:
// idle - RTT < p < idle. A client idle timeout t below idle discards the connection for
// p >= t instead. lo counts the pauses at least raceMargin inside the window, hi those
// within raceMargin of it.
func predictRaces(st scenario.Settings) (lo, hi int) {
	scale := st.TimeScale
	idle := time.Duration(st.Server.IdleTimeout)
	from, to := idle-time.Duration(st.Network.RTT), idle
	if t := time.Duration(st.Client.IdleTimeout); t > 0 && t < to {
		to = t
	}
	for _, real := range load.Pauses(loadSpec(st, scaler(scale))) {
		p := time.Duration(float64(real) / scale)
		if p > from+raceMargin && p < to-raceMargin {
			lo++
		}
		if p > from-raceMargin && p < to+raceMargin {
			hi++
		}
	}
	return lo, hi
}

// The stale-race file's error bands are the predictions of its seeded pauses, not bands
// wide enough to pass anyway: each variant's check must read exactly the counted range.
func TestStaleRaceBandsFollowFromThePauses(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "04-stale-race.yaml")
	p, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // variant -> the check it must carry
	for _, r := range p.Scenarios[0].Runs {
		lo, hi := predictRaces(r.Settings)
		switch r.Variant {
		case "node-agent", "undici", "idle-1900":
			want[r.Variant] = fmt.Sprintf("errors >= %d && errors <= %d", lo, hi)
		case "one-retry":
			want[r.Variant] = fmt.Sprintf("retries >= %d && retries <= %d", lo, hi)
		case "idle-1500":
			if hi != 0 {
				t.Errorf("idle-1500: %d pauses race; the variant's 0 errors is no longer a prediction", hi)
			}
			continue
		default:
			continue
		}
		var have []string
		for _, a := range r.Expect {
			have = append(have, a.Source)
		}
		if !slices.Contains(have, want[r.Variant]) {
			t.Errorf("%s: the pauses predict %q; the file checks %q", r.Variant, want[r.Variant], have)
		}
	}
	if len(want) != 4 {
		t.Errorf("checked %d variants (%v); the file's variants changed", len(want), want)
	}
}

// predictPoolDials counts the connections a closed-model run in batches opens, from its
// plan: the first batch dials one per request in flight (c); each later batch finds the
// connections the pool kept after the last one (kept: the pool size, or none when a pause
// reaches an idle timeout) and dials c - kept. Lateness can only lower the count (a request
// that starts a round trip late finds a connection its batch returned), so the band is the
// prediction less the counting noise, round(sqrt(n)).
func predictPoolDials(st scenario.Settings) (lo, hi int) {
	l := st.Load
	c := min(max(l.Concurrency, 1), l.Burst)
	batches := (l.Requests + l.Burst - 1) / l.Burst
	kept := c
	if m := st.Client.MaxIdle; m > 0 && m < c {
		kept = m
	}
	pause := time.Duration(l.Pause.Max)
	for _, idle := range []scenario.Duration{st.Server.IdleTimeout, st.Client.IdleTimeout} {
		if idle > 0 && pause >= time.Duration(idle) {
			kept = 0
		}
	}
	if !st.Client.KeepAlive {
		kept = 0
	}
	n := c + (batches-1)*(c-kept)
	return n - int(math.Round(math.Sqrt(float64(n)))), n
}

// The pool-thrash file's connection bands are what its batches predict: each kept-alive
// variant must check exactly the computed band, so a change to the plan (requests, batch,
// pool size, pause) that moves the count makes this test fail until the band follows.
func TestPoolThrashCountFollowsFromTheBatches(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "08-pool-thrash.yaml")
	p, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	for _, r := range p.Scenarios[0].Runs {
		if !r.Settings.Client.KeepAlive {
			continue
		}
		lo, hi := predictPoolDials(r.Settings)
		checked[r.Variant] = hi
		want := fmt.Sprintf("connections >= %d && connections <= %d", lo, hi)
		var have []string
		for _, a := range r.Expect {
			have = append(have, a.Source)
		}
		if !slices.Contains(have, want) {
			t.Errorf("%s: the batches predict %q; the file checks %q", r.Variant, want, have)
		}
	}
	// The prediction itself, worked by hand from the file: 50 batches of 10, a pool of 2
	// keeps 2 and dials 8 per batch; a pool of 10 keeps all 10.
	if checked["idle-2"] != 402 || checked["idle-10"] != 10 || len(checked) != 2 {
		t.Errorf("predicted %v; want idle-2 402 and idle-10 10", checked)
	}
}

// The FIN-timing file's checks are the predictions of its seeded pauses (predictRaces for
// the errors; one new connection after each pause past idle - RTT, whether the request
// after it failed or found the FIN), and they tell a FIN forwarded at once from one that
// keeps its one-way delay: that link would move the window's end from idle to idle - RTT/2,
// and the failures it leaves must be fewer than the file checks, by more than a pause near
// the new edge could blur.
func TestFINTimingFollowsFromThePauses(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "15-fin-timing.yaml")
	p, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Scenarios[0].Runs[0]
	st := r.Settings
	if st.Server.TLS {
		t.Fatal("the file must be plain HTTP: over TLS the close_notify tells the client of the close whatever the FIN does")
	}
	lo, hi := predictRaces(st)
	if lo != hi {
		t.Fatalf("the pauses predict %d..%d failures: pick a seed whose pauses keep clear of the window's edges", lo, hi)
	}
	idle, rtt := time.Duration(st.Server.IdleTimeout), time.Duration(st.Network.RTT)
	undelayed, past := 0, 0
	for _, real := range load.Pauses(loadSpec(st, scaler(st.TimeScale))) {
		p := time.Duration(float64(real) / st.TimeScale)
		if p > idle-rtt-raceMargin && p < idle-rtt/2+raceMargin {
			undelayed++
		}
		if p > idle-rtt {
			past++
		}
	}
	want := []string{fmt.Sprintf("errors == %d", lo), fmt.Sprintf("connections == %d", 1+past)}
	var have []string
	for _, a := range r.Expect {
		have = append(have, a.Source)
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			t.Errorf("the pauses predict %q; the file checks %q", w, have)
		}
	}
	if lo-undelayed < 2 {
		t.Errorf("with the FIN undelayed up to %d of the %d failures remain: the file cannot tell the FIN's timing", undelayed, lo)
	}
}
