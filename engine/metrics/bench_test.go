package metrics

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

func benchEvents(n int) []client.Event {
	rng := rand.New(rand.NewPCG(3, 3))
	ev := make([]client.Event, n)
	for i := range ev {
		ev[i] = ok(i, time.Duration(150e6*math.Exp(0.5*rng.NormFloat64())), uint64(i%64+1), i >= 64)
	}
	return ev
}

// BenchmarkAdd is the cost of recording one event from a single goroutine.
func BenchmarkAdd(b *testing.B) {
	ev := benchEvents(4096)
	a := New()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.Add(ev[i&4095])
	}
}

// BenchmarkAddParallel is Add under contention from every P, as when 64 requests
// in flight finish at once.
func BenchmarkAddParallel(b *testing.B) {
	ev := benchEvents(4096)
	a := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			a.Add(ev[i&4095])
			i++
		}
	})
}

// BenchmarkSummary is the cost of one Summary (percentile walk) after 1e5 events.
func BenchmarkSummary(b *testing.B) {
	a := New()
	for _, e := range benchEvents(100_000) {
		a.Add(e)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = a.Summary(time.Minute, 1).Flat()
	}
}

// BenchmarkMillionAdds reports the aggregator's live heap after 1e6 events
// (heap-B), the figure that must not grow with the number of requests.
func BenchmarkMillionAdds(b *testing.B) {
	ev := benchEvents(4096)
	for range b.N {
		before := liveHeap()
		a := New()
		for i := range 1_000_000 {
			a.Add(ev[i&4095])
		}
		b.ReportMetric(float64(liveHeap()-before), "heap-B")
		runtime.KeepAlive(a)
	}
}

// BenchmarkProbeSample is the cost of one RSS sample (read and parse
// /proc/self/statm), which the process's one sampler pays every interval.
func BenchmarkProbeSample(b *testing.B) {
	p := &ProcProbe{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.sample()
	}
}

// BenchmarkProbeSampleStatus is what a sample cost when it read /proc/self/status
// (as an earlier sampler did), for the ratio beside BenchmarkProbeSample.
func BenchmarkProbeSampleStatus(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		data, err := os.ReadFile("/proc/self/status")
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := parseRSS(data); !ok {
			b.Fatal("no VmRSS")
		}
	}
}
