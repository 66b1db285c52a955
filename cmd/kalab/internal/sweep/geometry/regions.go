package geometry

import "math"

// Region is a stretch of the parameter, open at both ends, that the geometry predicts to
// have one verdict: an unsafe band where a pause races a close, or a safe stretch between
// bands. Its ends may be infinite.
type Region struct {
	Lo, Hi float64
	Unsafe bool
}

// Contains reports whether v lies inside the region.
func (r Region) Contains(v float64) bool { return v > r.Lo && v < r.Hi }

// regions are the stretches between the prediction's edges that meet [lo, hi], in order.
// The edges alternate: below the first nothing races, between the first and the second
// these seeds' pauses race, and so on (an odd count leaves the last band open above). A
// safe stretch between two bands no wider than res, which the sweep does not resolve, is
// merged into them; a band is kept however narrow it is, since a grid can step over it.
func (p *Prediction) regions(lo, hi, res float64) []Region {
	if p == nil || len(p.Edges) == 0 {
		return nil
	}
	bounds := append(append([]float64{math.Inf(-1)}, p.Edges...), math.Inf(1))
	var all []Region
	for i := 1; i < len(bounds); i++ {
		r := Region{Lo: bounds[i-1], Hi: bounds[i], Unsafe: i%2 == 0}
		if n := len(all); n >= 2 && r.Unsafe && all[n-1].Hi-all[n-1].Lo <= res*(1+1e-9) {
			all = all[:n-1] // the narrow safe stretch goes into the band before it
			all[n-2].Hi = r.Hi
			continue
		}
		all = append(all, r)
	}
	var out []Region
	for _, r := range all {
		if r.Hi > lo && r.Lo < hi {
			out = append(out, r)
		}
	}
	return out
}

// Bands are the unsafe regions that meet [lo, hi].
func (p *Prediction) Bands(lo, hi, res float64) []Region {
	var out []Region
	for _, r := range p.regions(lo, hi, res) {
		if r.Unsafe {
			out = append(out, r)
		}
	}
	return out
}

// Probes are the regions the search must run a point inside, beyond its grid: every band
// (a grid can step over one), and every safe stretch wider than res.
func (p *Prediction) Probes(lo, hi, res float64) []Region {
	var out []Region
	for _, r := range p.regions(lo, hi, res) {
		if r.Unsafe || math.Min(r.Hi, hi)-math.Max(r.Lo, lo) > res {
			out = append(out, r)
		}
	}
	return out
}

// Edge is a value where the geometry's verdict changes inside the range; Up says the
// region above it is the unsafe one.
type Edge struct {
	At float64
	Up bool
}

// EdgesIn are the edges of the regions that meet [lo, hi] which lie inside it.
func (p *Prediction) EdgesIn(lo, hi, res float64) []Edge {
	var out []Edge
	for _, r := range p.regions(lo, hi, res) {
		if r.Lo > lo && r.Lo < hi {
			out = append(out, Edge{r.Lo, r.Unsafe})
		}
	}
	return out
}
