package runner

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

func TestTolerancesFromThePlan(t *testing.T) {
	t.Parallel()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	cases := []struct {
		name string
		src  string
		want map[string]time.Duration
	}{
		{"rtt only", "name: a\nnetwork: {rtt: 150ms}\ntime_scale: 0.1\nload: {requests: 2}\n",
			map[string]time.Duration{srcLink: ms(1.5)}},
		{"direct: nothing judged", "name: a\nload: {requests: 2}\n", map[string]time.Duration{}},
		{"pause range around the server's idle close", "name: a\nnetwork: {rtt: 150ms}\ntime_scale: 0.1\n" +
			"server: {idle_timeout: 2s}\nload: {requests: 20, burst: 10, pause: 1.5s..2.5s}\n",
			// gap = 500 ms, /4, x0.1 = 12.5 ms; the link keeps RTT/10 = 1.5 ms
			map[string]time.Duration{srcLink: ms(1.5), srcSchedule: ms(12.5), srcIdleClose: ms(12.5)}},
		{"a client idle timeout closer to the pause", "name: a\nnetwork: {rtt: 150ms}\n" +
			"server: {idle_timeout: 2s}\nclient: {idle_timeout: 1900ms}\nload: {requests: 20, burst: 10, pause: 1.5s..2.5s}\n",
			// gap = |1.5 s - 1.9 s| = 400 ms -> 100 ms
			map[string]time.Duration{srcLink: ms(15), srcSchedule: ms(100), srcIdleClose: ms(100)}},
		{"floor", "name: a\nnetwork: {rtt: 1ms}\ntime_scale: 0.1\nload: {requests: 2}\n",
			map[string]time.Duration{srcLink: tolFloor}},
	}
	for _, c := range cases {
		p := plan(t, c.src)
		st := p.Scenarios[0].Runs[0].Settings
		got := tolerances(st, scaler(st.TimeScale))
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", c.name, k, got[k], v)
			}
		}
	}
}

// TestLoadedMachineGivesNoFlippedVerdict loads the process on purpose while a run whose
// verdict turns on 10 ms of timing runs: the server closes idle connections at 100 ms and
// the client pauses 80 ms, so one connection serves every request only while the link and
// the schedule keep their time. Busy goroutines delay them; the run must then be noisy,
// rerun and end as an engine error with the message, and never record "connections == 1"
// as a failure (or a pass it did not earn).
func TestLoadedMachineGivesNoFlippedVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("loads both cores for a few seconds")
	}
	src := `
name: tight
network: {rtt: 10ms}
server: {idle_timeout: 100ms}
client: {idle_timeout: none}
load: {requests: 10, concurrency: 1, burst: 1, pause: 80ms}
expect: ["connections == 1"]
`
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 2*runtime.NumCPU(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for !stop.Load() {
				x++ // spin: only Go's preemption takes the CPU back, every 10 ms
			}
			_ = x
		}()
	}
	start := time.Now()
	out, err := Execute(context.Background(), plan(t, src), opts(t))
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	t.Logf("status %s in %v, attempt %d, connections %.0f, lag p99: link %.2f ms, schedule %.2f ms, idle close %.2f ms (scenario time)",
		r.Status, time.Since(start).Round(time.Millisecond), r.Timing.Attempt, r.Metrics.Connections,
		r.Metrics.LagMs.Link.P99, r.Metrics.LagMs.Schedule.P99, r.Metrics.LagMs.IdleClose.P99)
	switch {
	case r.Status == report.StatusPass && !r.Timing.Noisy:
		// The machine held the timing after all (a rerun alone may): the verdict is real.
	case r.Status == report.StatusError && r.Timing.Noisy:
		if !strings.Contains(r.Error, "could not hold this run's timing") || !strings.Contains(r.Error, "--time-scale") {
			t.Errorf("the error does not say what happened and what to do: %s", r.Error)
		}
		if len(r.Checks) != 0 {
			t.Errorf("a noisy run evaluated its checks: %+v", r.Checks)
		}
		if r.Timing.Attempt != MaxAttempts || len(r.Timing.Reruns) != MaxAttempts {
			t.Errorf("attempt %d with reruns %q, want %d attempts", r.Timing.Attempt, r.Timing.Reruns, MaxAttempts)
		}
		if !out.Errored() {
			t.Error("a run that stayed noisy must be an engine error (exit 3)")
		}
	default:
		t.Fatalf("a verdict under load: status %s, noisy %v, checks %+v, error %q", r.Status, r.Timing.Noisy, r.Checks, r.Error)
	}
}

func TestSummaryCountsReruns(t *testing.T) {
	t.Parallel()
	runs := []*report.Run{
		{Scenario: "s", Variant: "a", Status: report.StatusPass, Timing: &report.Timing{Attempt: 2, Reruns: []string{"attempt 1: link late"}}},
		{Scenario: "s", Variant: "b", Status: report.StatusError, Error: "noisy", Timing: &report.Timing{Attempt: 2, Noisy: true, Reruns: []string{"attempt 1: x", "attempt 2: y"}}},
		{Scenario: "s", Variant: "c", Status: report.StatusPass, Timing: &report.Timing{Attempt: 1}},
	}
	var b bytes.Buffer
	if err := report.Summary(&b, runs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"timing: 2 of 3 runs rerun alone", "1 still noisy", "s / a: attempt 1: link late", "s / b: rerun alone, still noisy"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestAdmissionWaitsForHeadroom: with a run in flight whose timers fire later than its
// tolerance, no other run is admitted; once it keeps its time (or ends), one is.
func TestAdmissionWaitsForHeadroom(t *testing.T) {
	t.Parallel()
	a := newAdmission()
	busy := &timers{}
	tol := map[string]time.Duration{srcLink: time.Millisecond}
	if ok, n := a.admit(context.Background(), busy, tol); !ok || n != 0 {
		t.Fatalf("the first run must start at once: ok=%v backoffs=%d", ok, n)
	}
	stop := make(chan struct{})
	late := make(chan struct{})
	go func() {
		defer close(late)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				busy.link.Add(5 * time.Millisecond) // every timer over the 1 ms tolerance
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*admitWindow)
	defer cancel()
	if ok, n := a.admit(ctx, &timers{}, tol); ok || n < 3 {
		t.Fatalf("admitted beside a run over its tolerance: ok=%v backoffs=%d", ok, n)
	}
	close(stop)
	<-late
	// On time again: punctual timers only.
	go func() {
		for i := 0; i < 40; i++ {
			busy.link.Add(0)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*admitWindow)
	defer cancel2()
	if ok, _ := a.admit(ctx2, &timers{}, tol); !ok {
		t.Fatal("not admitted once the run in flight kept its time")
	}
}
