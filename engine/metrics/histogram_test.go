package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(v uint64) {
		idx := bucketIndex(v)
		mid := bucketMid(idx)
		if got := bucketIndex(mid); got != idx {
			t.Fatalf("value %d: bucket %d reports %d, which falls in bucket %d", v, idx, mid, got)
		}
		if v < subCount && mid != v {
			t.Fatalf("value %d below %d not exact: reported %d", v, subCount, mid)
		}
		if rel := math.Abs(float64(mid)-float64(v)) / float64(v); v > 0 && rel > maxRelError {
			t.Fatalf("value %d reported as %d: relative error %.6f > %.6f", v, mid, rel, maxRelError)
		}
	}
	for v := range uint64(5000) {
		check(v)
	}
	for range 200000 {
		check(rng.Uint64() >> rng.UintN(64))
	}
	check(math.MaxInt64)
	check(math.MaxUint64)
	// Bucket indexes are monotonic in the value and stay inside the page table.
	prev := -1
	for v := uint64(1); v < 1<<40; v = v*17/16 + 1 {
		idx := bucketIndex(v)
		if idx < prev {
			t.Fatalf("bucketIndex(%d) = %d < previous %d", v, idx, prev)
		}
		prev = idx
	}
	if last := bucketIndex(math.MaxUint64); last/pageBuckets >= pageCount {
		t.Fatalf("largest value maps to page %d of %d", last/pageBuckets, pageCount)
	}
}

// exactQuantile is the nearest-rank definition the histogram promises.
func exactQuantile(sorted []uint64, q float64) uint64 {
	r := int(math.Ceil(q * float64(len(sorted))))
	r = min(max(r, 1), len(sorted))
	return sorted[r-1]
}

func TestPercentilesAgainstExactSort(t *testing.T) {
	t.Parallel()
	ms := float64(time.Millisecond)
	gens := []struct {
		name string
		gen  func(r *rand.Rand) float64 // nanoseconds
	}{
		{"uniform sub-2us (exact range)", func(r *rand.Rand) float64 { return float64(r.IntN(2048)) }},
		{"uniform 1ms-1s", func(r *rand.Rand) float64 { return ms + r.Float64()*999*ms }},
		{"lognormal around 150ms", func(r *rand.Rand) float64 { return 150 * ms * math.Exp(0.5*r.NormFloat64()) }},
		{"exponential mean 5ms", func(r *rand.Rand) float64 { return 5 * ms * r.ExpFloat64() }},
		{"bimodal reuse vs new (155/462ms)", func(r *rand.Rand) float64 {
			if r.IntN(10) < 3 {
				return 462*ms + r.NormFloat64()*5*ms
			}
			return 155*ms + r.NormFloat64()*3*ms
		}},
		{"constant", func(*rand.Rand) float64 { return 42 * ms }},
		{"wide 1us-100s", func(r *rand.Rand) float64 { return 1000 * math.Pow(10, 8*r.Float64()) }},
	}
	qs := []float64{0, 0.5, 0.9, 0.95, 0.99, 0.999, 1}
	for _, g := range gens {
		for _, n := range []int{1, 2, 3, 10, 101, 1000, 50000} {
			rng := rand.New(rand.NewPCG(uint64(n), 99))
			var h histogram
			vals := make([]uint64, n)
			var sum float64
			for i := range vals {
				v := uint64(max(g.gen(rng), 0))
				vals[i] = v
				sum += float64(v)
				h.record(time.Duration(v))
			}
			slices.Sort(vals)
			got := h.quantiles(qs)
			for i, q := range qs {
				want := exactQuantile(vals, q)
				if rel := math.Abs(float64(got[i])-float64(want)) / math.Max(float64(want), 1); rel > 0.001 {
					t.Errorf("%s n=%d q=%v: histogram %d, exact %d, relative error %.5f > 0.1%%", g.name, n, q, got[i], want, rel)
				}
			}
			if h.min != vals[0] || h.max != vals[n-1] {
				t.Errorf("%s n=%d: min/max %d/%d, want exact %d/%d", g.name, n, h.min, h.max, vals[0], vals[n-1])
			}
			if mean := sum / float64(n); math.Abs(h.sum/float64(h.count)-mean) > 1e-9*mean+1e-9 {
				t.Errorf("%s n=%d: mean %f, want %f", g.name, n, h.sum/float64(h.count), mean)
			}
		}
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	t.Parallel()
	var h histogram
	if got := h.quantiles([]float64{0.5, 1}); got[0] != 0 || got[1] != 0 {
		t.Fatalf("empty histogram quantiles = %v, want zeros", got)
	}
	h.record(-5 * time.Second)
	if h.min != 0 || h.max != 0 || h.count != 1 {
		t.Fatalf("negative duration recorded as min %d max %d count %d, want a single 0", h.min, h.max, h.count)
	}
}
