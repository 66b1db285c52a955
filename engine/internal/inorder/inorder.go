// Package inorder writes the request records that end at one instant of the virtual clock
// in seq order. Several requests multiplexed on one connection end together, and the order
// their goroutines record them in is Go's scheduler's; held until the clock moves on and
// sorted, they are written the same way in every run.
package inorder

import (
	"cmp"
	"slices"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// Sink is where the records go: a run's requests file (report.RequestWriter).
type Sink interface {
	Write(r *report.Request)
	Close() error
}

// Writer holds the records of one instant and writes them to its sink, in order, once a
// record of a later instant comes or it is closed. It is not safe for concurrent use.
type Writer struct {
	sink Sink
	at   time.Time
	held []report.Request
}

// New returns a Writer in front of sink.
func New(sink Sink) *Writer { return &Writer{sink: sink} }

// For returns a Writer in front of sink on the virtual clock, sink itself on the real one
// (where no two requests end at one instant).
func For(sink Sink, virtual bool) Sink {
	if virtual {
		return New(sink)
	}
	return sink
}

// Write holds a copy of r, which ended now; first it writes what ended at an earlier
// instant.
func (w *Writer) Write(r *report.Request) {
	if now := time.Now(); !now.Equal(w.at) {
		w.flush()
		w.at = now
	}
	w.held = append(w.held, *r)
}

// Close writes what is held and closes the sink.
func (w *Writer) Close() error {
	w.flush()
	return w.sink.Close()
}

// flush writes what is held, by seq, then by the replayed client that sent it.
func (w *Writer) flush() {
	slices.SortStableFunc(w.held, func(a, b report.Request) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Client, b.Client))
	})
	for i := range w.held {
		w.sink.Write(&w.held[i])
	}
	w.held = w.held[:0]
}
