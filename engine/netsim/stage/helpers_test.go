package stage

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// iw is the default initial window in bytes, written out: 10 segments of 1,448.
const iw = 10 * 1448

// t0 is the instant the tests count from.
var t0 = time.Unix(1000, 0)

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// wantPieces fails t unless got holds exactly want: the same sizes at the same instants.
func wantPieces(t *testing.T, what string, got, want []Piece) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b Piece) bool { return a.N == b.N && a.At.Equal(b.At) }) {
		t.Errorf("%s:\n got %v\nwant %v", what, show(got), show(want))
	}
}

// show writes pieces as (bytes @ offset from t0).
func show(ps []Piece) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%dB@+%v", p.N, p.At.Sub(t0))
	}
	return out
}
