package load

import (
	"context"
	"testing"
)

// BenchmarkRunSequential is the scheduling overhead per request with one in flight
// and a call that does nothing.
func BenchmarkRunSequential(b *testing.B) {
	s := Spec{Requests: 10_000}
	b.ReportAllocs()
	for range b.N {
		if err := Run(context.Background(), s, func(context.Context, int) {}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*s.Requests), "ns/request")
}

// BenchmarkRunConcurrent64 is the same with 64 in flight, the acceptance load of
// the runner issue.
func BenchmarkRunConcurrent64(b *testing.B) {
	s := Spec{Requests: 10_000, Concurrency: 64}
	b.ReportAllocs()
	for range b.N {
		if err := Run(context.Background(), s, func(context.Context, int) {}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*s.Requests), "ns/request")
}

// BenchmarkPauses is the cost of drawing the pause sequence of a 1,000-request,
// 10-per-burst schedule.
func BenchmarkPauses(b *testing.B) {
	s := Spec{Requests: 1000, Burst: 10, PauseMin: 1500e6, PauseMax: 2500e6, Seed: 7}
	b.ReportAllocs()
	for range b.N {
		_ = Pauses(s)
	}
}
