package inorder

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

type sink struct {
	seqs   []int
	closed bool
}

func (s *sink) Write(r *report.Request) { s.seqs = append(s.seqs, r.Seq) }
func (s *sink) Close() error            { s.closed = true; return nil }

// TestSameInstantBySeq: records of one instant are written by seq once a later instant's
// record comes, and the last instant's at Close; records of different instants keep their
// instants' order.
func TestSameInstantBySeq(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := New(s)
		for _, seq := range []int{7, 3, 5} {
			w.Write(&report.Request{Seq: seq})
		}
		if len(s.seqs) != 0 {
			t.Fatalf("wrote %v before the instant passed", s.seqs)
		}
		time.Sleep(time.Millisecond)
		w.Write(&report.Request{Seq: 1})
		w.Write(&report.Request{Seq: 0})
		if !slices.Equal(s.seqs, []int{3, 5, 7}) {
			t.Fatalf("after the first instant: %v, want [3 5 7]", s.seqs)
		}
		if err := w.Close(); err != nil || !s.closed {
			t.Fatalf("Close: %v, sink closed %v", err, s.closed)
		}
		if want := []int{3, 5, 7, 0, 1}; !slices.Equal(s.seqs, want) {
			t.Errorf("written %v, want %v", s.seqs, want)
		}
	})
}
