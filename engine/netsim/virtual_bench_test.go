package netsim

import (
	"testing"
	"time"
)

// BenchmarkVirtualLinkRequests measures 1,000 sequential HTTP-like request/response
// exchanges over one virtual link at 50 ms RTT, each run in its own synctest bubble, and
// reports the real time per request (ns/req) and per run of 1,000 (ms/run). synctest.Test
// takes only a *testing.T, so each run goes through testing.RunTests, which makes one.
func BenchmarkVirtualLinkRequests(b *testing.B) {
	const reqs = 1000
	var runs int
	var wall time.Duration
	all := func(string, string) (bool, error) { return true, nil }
	test := []testing.InternalTest{{Name: "VirtualLinkRequests", F: func(t *testing.T) {
		t0 := time.Now()
		if took := vRequests(t, reqs, 50*time.Millisecond); took != 50*time.Millisecond*(reqs+1) {
			t.Errorf("virtual time %v, want %v", took, 50*time.Millisecond*(reqs+1))
		}
		wall += time.Since(t0)
		runs++
	}}}
	for b.Loop() {
		if !testing.RunTests(all, test) {
			b.Fatal("the run failed")
		}
	}
	b.ReportMetric(float64(wall.Nanoseconds())/float64(runs*reqs), "ns/req")
	b.ReportMetric(float64(wall.Milliseconds())/float64(runs), "ms/run")
}
