package geometry

import (
	"math"
	"slices"
	"testing"
)

// The ALB file's band (the pauses race a server idle timeout from 5.92 s to 6.14 s), swept
// over 5..8 s at 0.1 s: one unsafe band, probed with the safe stretch on each side (both
// wider than the resolution), and its two edges, the lower one opening the band.
func TestRegionsOfOneBand(t *testing.T) {
	p := &Prediction{Edges: []float64{5.92, 6.14}}
	inf := math.Inf(1)
	if got, want := p.Bands(5, 8, 0.1), []Region{{5.92, 6.14, true}}; !slices.Equal(got, want) {
		t.Errorf("bands %v, want %v", got, want)
	}
	if got, want := p.Probes(5, 8, 0.1), []Region{{-inf, 5.92, false}, {5.92, 6.14, true}, {6.14, inf, false}}; !slices.Equal(got, want) {
		t.Errorf("probes %v, want %v", got, want)
	}
	if got, want := p.EdgesIn(5, 8, 0.1), []Edge{{5.92, true}, {6.14, false}}; !slices.Equal(got, want) {
		t.Errorf("edges %v, want %v", got, want)
	}
	if r := (Region{5.92, 6.14, true}); !r.Contains(6) || r.Contains(5.92) || r.Contains(6.14) {
		t.Errorf("%v: open at both ends, containing 6", r)
	}
}

// A safe stretch between two bands no wider than the resolution is merged into them: the
// sweep does not resolve it, so the two bands are one.
func TestNarrowSafeStretchMerged(t *testing.T) {
	p := &Prediction{Edges: []float64{1, 2, 2.05, 3}}
	if got, want := p.Bands(0, 4, 0.1), []Region{{1, 3, true}}; !slices.Equal(got, want) {
		t.Errorf("bands %v, want %v", got, want)
	}
	if got := p.Bands(0, 4, 0.01); len(got) != 2 {
		t.Errorf("bands at 0.01 s %v, want the two bands apart", got)
	}
}
