package metrics

import (
	"math"
	"math/bits"
	"time"
)

// The histogram keeps exact counts for values below 2^subBits nanoseconds and, above
// that, splits every power of two into 2^(subBits-1) equal buckets. A bucket is at most
// 1/1024 of its lower bound wide, and a percentile reports the bucket's midpoint, so
// the reported value is within 1/2048 (0.049%) of the true one.
const (
	subBits     = 11
	subCount    = 1 << subBits          // 2048 exact values, then 1024 buckets per octave
	halfCount   = subCount / 2          // buckets per octave
	maxShift    = 64 - subBits          // a uint64 value has at most this shift
	pageCount   = maxShift + 2          // page 0 and 1 hold the exact range, one page per shift after
	pageBuckets = halfCount             // buckets per page
	maxRelError = 1.0 / (2 * halfCount) // documented bound, used by tests
)

// histogram counts durations in log-linear buckets. Pages of 1,024 counters are
// allocated the first time a value of their magnitude arrives, so the memory is
// bounded by pageCount pages (440 KiB) whatever the number of values, and in practice
// is a few dozen KiB because latencies span only a few octaves.
type histogram struct {
	pages [pageCount]*[pageBuckets]uint64
	count uint64
	min   uint64
	max   uint64
	sum   float64 // float so that a long run cannot overflow it
}

// bucketIndex maps v to its bucket: exact below subCount, log-linear above.
func bucketIndex(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits // >= 1
	return shift*halfCount + int(v>>uint(shift))
}

// bucketMid returns the value a bucket reports: the value itself in the exact range,
// the midpoint of the bucket's range above it.
func bucketMid(idx int) uint64 {
	if idx < subCount {
		return uint64(idx)
	}
	shift := idx/halfCount - 1
	m := uint64(idx - shift*halfCount)
	lower := m << uint(shift)
	return lower + (uint64(1)<<uint(shift)-1)/2
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	v := uint64(d)
	idx := bucketIndex(v)
	p := h.pages[idx/pageBuckets]
	if p == nil {
		p = new([pageBuckets]uint64)
		h.pages[idx/pageBuckets] = p
	}
	p[idx%pageBuckets]++
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.count++
	h.sum += float64(v)
}

// quantiles returns, for each q in qs (ascending, in [0,1]), the nearest-rank value:
// the smallest recorded value v such that at least q of all values are <= v, read
// from its bucket and clamped to the exact min and max.
func (h *histogram) quantiles(qs []float64) []uint64 {
	out := make([]uint64, len(qs))
	if h.count == 0 {
		return out
	}
	ranks := make([]uint64, len(qs))
	for i, q := range qs {
		r := uint64(math.Ceil(q * float64(h.count)))
		ranks[i] = min(max(r, 1), h.count)
	}
	var seen uint64
	next := 0
	for pi, p := range h.pages {
		if p == nil {
			continue
		}
		for bi, c := range p {
			if c == 0 {
				continue
			}
			seen += c
			for next < len(ranks) && ranks[next] <= seen {
				out[next] = min(max(bucketMid(pi*pageBuckets+bi), h.min), h.max)
				next++
			}
			if next == len(ranks) {
				return out
			}
		}
	}
	return out
}
