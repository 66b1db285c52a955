package netsim

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkParallelReused is the load kalab puts on netsim when it runs
// several scenarios at once: `runs` proxies, each in front of its own HTTP
// server, each carrying `conns` clients that send sequential reused
// requests at 30 ms RTT, all at the same time and all in this process. It
// reports the median against the 1 RTT model and the whole process's CPU
// per request, which is what per-writer spinning used to drive up until
// the two cores saturated. The same requests sent straight to the servers
// afterwards, each after an idle pause, give the endpoints' own share.
func BenchmarkParallelReused(b *testing.B) {
	for _, tc := range []struct{ runs, conns int }{{1, 1}, {8, 1}, {8, 4}} {
		b.Run(fmt.Sprintf("runs=%d/conns=%d", tc.runs, tc.conns), func(b *testing.B) {
			benchParallel(b, tc.runs, tc.conns, 30*time.Millisecond, 100)
		})
	}
}

func benchParallel(b *testing.B, runs, conns int, rtt time.Duration, n int) {
	servers := make([]string, runs)
	for i := range servers {
		servers[i], _ = httpServer(b, false)
	}
	// each runs n requests per client on every server's address (through
	// its proxy when proxied) at once, the first opening the connection,
	// and returns the latencies after the first.
	each := func(addr func(i int) string, pause time.Duration, n int) []time.Duration {
		return inStep(runs*conns, func(i int) func() []time.Duration {
			c := httpClient(b, nil, true)
			get(b, c, "http", addr(i/conns)) // opens the reused connection
			return func() []time.Duration {
				own := make([]time.Duration, 0, n)
				for range n {
					time.Sleep(pause)
					own = append(own, get(b, c, "http", addr(i/conns)))
				}
				return own
			}
		})
	}
	var lat []time.Duration
	var cpu time.Duration
	for range b.N {
		ps := make([]*Proxy, runs)
		for i := range ps {
			p, err := Start(Config{Upstream: servers[i], RTT: rtt})
			if err != nil {
				b.Fatal(err)
			}
			ps[i] = p
		}
		before := cpuTime(b)
		lat = append(lat, each(func(i int) string { return ps[i].Addr() }, 0, n)...)
		cpu += cpuTime(b) - before
		for _, p := range ps {
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	base := each(func(i int) string { return servers[i] }, rtt/2, max(n/4, 10))
	slices.Sort(lat)
	slices.Sort(base)
	q := func(l []time.Duration, f float64) time.Duration { return l[int(f*float64(len(l)-1))] }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p50 := q(lat, 0.5)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(q(lat, 0.99)-p50), "p99-p50-ms")
	b.ReportMetric(100*float64(p50-rtt)/float64(rtt), "overhead-%")
	b.ReportMetric(ms(q(base, 0.5)), "direct-p50-ms")
	b.ReportMetric(100*float64(p50-rtt-q(base, 0.5))/float64(rtt), "proxy-overhead-%")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-us/req")
}
