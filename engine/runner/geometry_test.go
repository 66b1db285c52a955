package runner

import (
	"fmt"
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
