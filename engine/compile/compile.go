// Package compile turns a plan into runs with every question their planning asks answered
// once: the invocation's overrides applied to the settings, the clock chosen and why, the
// time scale the run goes at, what keeps a run from a verdict before it starts (HTTP/3's
// idle floor, Chromium's PING), the real client program it starts, the oracle's plan and
// the estimate of how long it takes. The runner, the shards and the sweeps read a compiled
// run; none of them asks the scenario's settings those questions again.
package compile

import (
	"fmt"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/predict"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// Options are what of an invocation changes how its runs go.
type Options struct {
	TimeScale float64 // > 0 overrides every file's time_scale
	Seed      *int64  // overrides every run's load.seed
	// Clock, when set (scenario.ClockVirtual or ClockReal), overrides every run's clock
	// where the run can follow it (kalab run --clock).
	Clock string
	// Virtual says this process can host a virtual clock (a vclock host); without one
	// every run goes on the real clock.
	Virtual bool
	// CallerClient: the caller's own Go client replaces the file's client section
	// (kalabtest's go-func); CallerRealClock keeps it on the real clock.
	CallerClient, CallerRealClock bool
	// TestHops: a test adds hops of its own to every run's path, which the virtual clock
	// does not model.
	TestHops bool
}

// Run is one run of a plan, compiled.
type Run struct {
	Scenario *scenario.Scenario
	Source   *scenario.Run // the run as its file gives it
	// Settings are the run's as it goes: the invocation's overrides applied, its clock
	// chosen (Settings.Clock), and its time scale the one it runs at (1 for a real
	// program, the caller's client on the real clock, and the virtual clock).
	Settings scenario.Settings
	// Notes are the record's notes on what of the file the run does not apply, and why it
	// runs on the real clock.
	Notes []string
	// Exec is the real client program the run starts; nil for kalab's own client.
	Exec *execclient.Config
	// Refused says why the run cannot have a verdict as planned: it ends as an engine
	// error without starting. "" when it can.
	Refused string
	// Pauses are the seeded pauses between its bursts, in real time at its time scale.
	Pauses []time.Duration
	// Oracle is the oracle's plan of the run (predict.Plan of Settings).
	Oracle oracle.Plan
	// Expected is how long the run should take in real time (Expected).
	Expected time.Duration
}

// Scale is the run's time scale, Settings.TimeScale.
func (c *Run) Scale() shape.Scale { return shape.Scale(c.Settings.TimeScale) }

// Virtual reports whether the run goes on the virtual clock (Settings.Clock).
func (c *Run) Virtual() bool { return c.Settings.Clock == scenario.ClockVirtual }

// Plan compiles every run of plan, in the plan's order.
func Plan(plan *scenario.Plan, opt Options) []*Run {
	var out []*Run
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			out = append(out, One(sc, r, opt))
		}
	}
	return out
}

// One compiles run r of scenario sc (sc may be nil where only the run's settings matter).
func One(sc *scenario.Scenario, r *scenario.Run, opt Options) *Run {
	c := &Run{Scenario: sc, Source: r}
	st := r.Settings
	if opt.TimeScale > 0 {
		st.TimeScale = opt.TimeScale
	}
	if opt.Seed != nil {
		st.Load.Seed = *opt.Seed
	}
	if opt.CallerClient {
		st.Client.Exec = nil // the caller's client replaces whatever the file names
		c.Notes = append(c.Notes, "go-func client: the caller's Go client; of the file's client section only method, path, headers and timeout apply")
	}
	if st.Client.Exec != nil {
		// A real program runs in real time: an exec run ignores the time scale.
		if st.TimeScale != 1 {
			c.Notes = append(c.Notes, fmt.Sprintf("exec client: ran at time scale 1, not %g (a real client runs in real time)", st.TimeScale))
			st.TimeScale = 1
		}
		ex := configure.ExecConfig(st)
		c.Exec = &ex
		if ignored := configure.ExecIgnored(st); ignored != "" {
			c.Notes = append(c.Notes, ignored)
		}
	}
	cc := chooseClock(st, opt)
	if opt.CallerClient && cc.clock == scenario.ClockReal && st.TimeScale != 1 {
		c.Notes = append(c.Notes, fmt.Sprintf("go-func client: ran at time scale 1, not %g (a client on the real clock runs in real time)", st.TimeScale))
		st.TimeScale = 1
	}
	if note := cc.note(st.TimeScale); note != "" {
		c.Notes = append(c.Notes, note)
	}
	st.Clock = cc.clock
	if cc.clock == scenario.ClockVirtual {
		st.TimeScale = 1 // simulated time needs no compression
	}
	for _, why := range []string{quicScaleRefused(st), chromiumPingRefused(st)} {
		if why != "" && cc.refused == "" {
			cc.refused = why
		}
	}
	c.Settings, c.Refused = st, cc.refused
	c.Pauses = load.Pauses(configure.Load(st, c.Scale()))
	c.Oracle = predict.Plan(st)
	c.Expected = estimate(st)
	return c
}

// RealRuns is the plan of the runs that go on the real clock (their scenarios with only
// those runs), of runs compiled by Plan: what the timing judge can have anything to say
// about.
func RealRuns(runs []*Run) *scenario.Plan {
	out := &scenario.Plan{}
	var last *scenario.Scenario
	for _, c := range runs {
		if c.Virtual() {
			continue
		}
		if c.Scenario != last {
			sc := *c.Scenario
			sc.Runs, last = nil, c.Scenario
			out.Scenarios = append(out.Scenarios, &sc)
		}
		sc := out.Scenarios[len(out.Scenarios)-1]
		sc.Runs = append(sc.Runs, c.Source)
	}
	return out
}

// quicScaleRefused says why an HTTP/3 run cannot take its time scale on the real clock (a
// --time-scale the file's load check did not see): quic-go reads a peer's max_idle_timeout
// under 5 s as 5 s, so the two ends would disagree on when a connection ends. "" when it can.
func quicScaleRefused(st scenario.Settings) string {
	if !st.Server.HTTP3() || st.Clock != scenario.ClockReal {
		return ""
	}
	if short := scenario.QUICIdleUnderFloor(st, st.TimeScale); len(short) > 0 {
		f := short[0]
		return fmt.Sprintf("time scale %g makes %s %v on the real clock: quic-go reads a peer's max_idle_timeout under 5 s as 5 s, so client and server would disagree on when a connection ends; use a larger time scale", st.TimeScale, f.Path, f.Scaled)
	}
	return ""
}
