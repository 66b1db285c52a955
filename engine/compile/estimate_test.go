package compile

import (
	"math"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestExpectedArithmetic pins the estimate to the plan's round trips, pauses and rate.
func TestExpectedArithmetic(t *testing.T) {
	ms := func(n float64) scenario.Duration { return scenario.Duration(n * float64(time.Millisecond)) }
	base := func() scenario.Settings {
		var st scenario.Settings
		st.TimeScale = 1
		st.Network.RTT = ms(100)
		st.Client.KeepAlive = true
		st.Load.Requests = 10
		st.Load.Concurrency = 1
		return st
	}
	overhead := func(requests, conns int, rtt time.Duration) time.Duration {
		return estimateSetup + time.Duration(requests)*estimateCPURequest + time.Duration(conns)*estimateCPUConn + rtt
	}
	cases := []struct {
		name string
		edit func(*scenario.Settings)
		want time.Duration
	}{
		{"plain, reused: one new (2 RTT), nine reused", func(*scenario.Settings) {},
			200*time.Millisecond + 9*100*time.Millisecond + overhead(10, 1, 100*time.Millisecond)},
		{"TLS 1.3, no keep-alive: 3 RTT each", func(st *scenario.Settings) { st.Server.TLS, st.Client.KeepAlive = true, false },
			10*300*time.Millisecond + overhead(10, 10, 100*time.Millisecond)},
		{"TLS 1.2 adds a round trip", func(st *scenario.Settings) {
			st.Server.TLS, st.Server.TLSVersion, st.Client.KeepAlive = true, "1.2", false
		}, 10*400*time.Millisecond + overhead(10, 10, 100*time.Millisecond)},
		{"response delay on every request", func(st *scenario.Settings) { st.Server.Response.Delay = ms(50) },
			250*time.Millisecond + 9*150*time.Millisecond + overhead(10, 1, 100*time.Millisecond)},
		{"time scale shrinks the network part only", func(st *scenario.Settings) { st.TimeScale = 0.1 },
			(200*time.Millisecond+9*100*time.Millisecond)/10 + overhead(10, 1, 10*time.Millisecond)},
		{"concurrency: two waves of five", func(st *scenario.Settings) { st.Load.Concurrency = 5 },
			200*time.Millisecond + 100*time.Millisecond + overhead(10, 5, 100*time.Millisecond)},
		{"bursts with a fixed pause shorter than the idle timeout", func(st *scenario.Settings) {
			st.Load.Burst, st.Load.Pause = 5, scenario.Range{Min: ms(1000), Max: ms(1000)}
			st.Server.IdleTimeout = ms(2000)
		}, 200*time.Millisecond + 9*100*time.Millisecond + time.Second + overhead(10, 1, 100*time.Millisecond)},
		{"a pause that outlives the idle timeout reopens", func(st *scenario.Settings) {
			st.Load.Burst, st.Load.Pause = 5, scenario.Range{Min: ms(3000), Max: ms(3000)}
			st.Server.IdleTimeout = ms(2000)
		}, 2*(200*time.Millisecond+4*100*time.Millisecond) + 3*time.Second + overhead(10, 2, 100*time.Millisecond)},
		{"a hint of 1 s minus a 1 s buffer: no pooling", func(st *scenario.Settings) {
			st.Client.HonorHint, st.Client.HintBuffer = true, ms(1000)
			st.Server.KeepaliveHint = scenario.Hint{Mode: scenario.HintDuration, Duration: ms(1000)}
		}, 10*200*time.Millisecond + overhead(10, 10, 100*time.Millisecond)},
		{"a balancer adds its backend round trip; its idle timeout is the client's", func(st *scenario.Settings) {
			st.Server.IdleTimeout = ms(500) // behind the balancer: not what the client sees
			st.Load.Burst, st.Load.Pause = 5, scenario.Range{Min: ms(1000), Max: ms(1000)}
			st.Balancer = &scenario.Balancer{IdleTimeout: ms(60000)}
			st.Balancer.BackendNetwork.RTT = ms(50)
			st.Balancer.Backend.KeepAlive = true
		}, 250*time.Millisecond + 9*150*time.Millisecond + time.Second + overhead(10, 1, 100*time.Millisecond)},
		{"open model: arrivals at 10/s, the last one answered", func(st *scenario.Settings) { st.Load.Rate, st.Load.Concurrency = 10, 0 },
			900*time.Millisecond + 100*time.Millisecond + 100*time.Millisecond + overhead(10, 10, 100*time.Millisecond)},
	}
	for _, c := range cases {
		st := base()
		c.edit(&st)
		if got := estimate(st); got != c.want {
			t.Errorf("%s: estimate %v, want %v", c.name, got, c.want)
		}
	}
}

// absoluteSlack is how far the estimate of a short run may miss its measured wall time.
const absoluteSlack = 500

// TestExpectedMatchesTheBaseline compares the estimate of every bundled run with the wall
// time the committed baseline measured for it: runs of a second or more must be within 30% (or, for short runs, absoluteSlack ms).
func TestExpectedMatchesTheBaseline(t *testing.T) {
	files, err := scenario.FindFiles([]string{"../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	base, err := report.ReadFile("../../results/baseline.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	wall := map[string]float64{}
	for _, r := range base.Runs {
		// The estimate leaves out races (Expected): a run where a quarter of the requests or
		// more went into a connection the server had closed (truth-libcurl: 5 of 6, each
		// re-sent on a new TLS connection) is timed by them, not by its plan.
		if raced := max(r.Metrics.FailedAttempts, r.Metrics.Retries+r.Metrics.HiddenRetries); raced*4 >= r.Metrics.Requests && raced > 0 {
			t.Logf("%s/%s: %.0f of %.0f requests raced a close; not compared", r.Scenario, r.Variant, raced, r.Metrics.Requests)
			continue
		}
		// Nor can it count the dials Go's HTTP/2 Transport races against its first
		// connection (11-http2-cold-start: 200-300 connections and TLS handshakes for 200
		// requests, 2026-12-02), each through the link and its CPU: a run that opened more
		// connections than requests is timed by them.
		if r.Metrics.Connections > r.Metrics.Requests {
			t.Logf("%s/%s: %.0f connections for %.0f requests; not compared", r.Scenario, r.Variant, r.Metrics.Connections, r.Metrics.Requests)
			continue
		}
		wall[r.Scenario+"/"+r.Variant] = r.WallMs
	}
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			key := sc.Name + "/" + r.Variant
			w, ok := wall[key]
			if !ok || w < 1000 {
				continue
			}
			est := float64(One(sc, r, Options{}).Expected) / float64(time.Millisecond)
			// Runs start longest first, so the short ones end the suite up to eight at a
			// time: their start-up and teardown, which the plan cannot see, vary by a few
			// hundred ms (truth-undici/model-awaited: 651 ms estimated, 1,037 ms taken on
			// 2026-12-02). Within 30%, or within absoluteSlack of a short run.
			if ratio := est / w; (ratio < 0.7 || ratio > 1.3) && math.Abs(est-w) > absoluteSlack {
				t.Errorf("%s: estimated %.0f ms, the baseline took %.0f ms (ratio %.2f)", key, est, w, ratio)
			}
		}
	}
}
