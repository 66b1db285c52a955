package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// bars draws one live progress bar per run in flight: requests done of total, errors so
// far, elapsed time. Only used when stdout is a terminal.
type bars struct {
	p  *mpb.Progress
	mu sync.Mutex
	m  map[*scenario.Run]*bar
}

type bar struct {
	b      *mpb.Bar
	errors atomic.Int64
}

func newBars(w io.Writer) *bars {
	// Auto refresh: bars are only made for a terminal, and the tests draw them into a buffer.
	return &bars{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(30), mpb.WithAutoRefresh()), m: map[*scenario.Run]*bar{}}
}

func (b *bars) RunStarted(r *scenario.Run, total int) {
	rb := &bar{}
	rb.b = b.p.AddBar(int64(total),
		mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(r.Scenario+" / "+r.Variant, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(
			decor.CountersNoUnit("%d/%d requests", decor.WCSyncSpace),
			decor.Any(func(decor.Statistics) string { return fmt.Sprintf("errors %d", rb.errors.Load()) }, decor.WCSyncSpace),
			// Real time, unlike the summary's TOTAL s, which is in scenario time.
			decor.Name(" wall"),
			decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace),
		))
	b.mu.Lock()
	b.m[r] = rb
	b.mu.Unlock()
}

func (b *bars) get(r *scenario.Run) *bar {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[r]
}

func (b *bars) RequestDone(r *scenario.Run, ok bool) {
	rb := b.get(r)
	if rb == nil {
		return
	}
	if !ok {
		rb.errors.Add(1)
	}
	rb.b.Increment()
}

func (b *bars) RunEnded(r *scenario.Run, _ *report.Run) {
	if rb := b.get(r); rb != nil {
		rb.b.Abort(true)
	}
}

// Wait stops drawing; call it before printing the summary.
func (b *bars) Wait() { b.p.Wait() }
