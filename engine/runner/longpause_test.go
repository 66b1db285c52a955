package runner

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// countedCtx counts how often the bubble's watcher looks at the outer context.
type countedCtx struct {
	context.Context
	looks atomic.Int64
}

func (c *countedCtx) Err() error { c.looks.Add(1); return c.Context.Err() }

// TestBubbleContextLooksLessWhileQuiet: over a quiet simulated year the watcher of the outer
// context looks after 1, 2, 4, ... 2048 s (12 looks, the last at 4,095 s), then every hour
// (8,758 more before the year ends), not once per simulated second (31,536,000 looks, some
// 30 s of real time, which the watchdog took for a bubble blocked outside the model). An
// event brings it back to one look a second; an interrupt reaches the bubble within a second.
func TestBubbleContextLooksLessWhileQuiet(t *testing.T) {
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	outer := &countedCtx{Context: inner}
	synctest.Test(t, func(t *testing.T) {
		ctx, stop, wake := bubbleContext(outer)
		defer stop()
		time.Sleep(8760 * time.Hour)
		synctest.Wait()
		if got := outer.looks.Load(); got != 12+8758 {
			t.Fatalf("%d looks over a quiet year; want %d", got, 12+8758)
		}
		// Events every second, half a second off the watcher's grid: one look a second.
		before := outer.looks.Load()
		for range 10 {
			wake()
			time.Sleep(500 * time.Millisecond)
			wake()
			time.Sleep(500 * time.Millisecond)
		}
		synctest.Wait()
		if got := outer.looks.Load() - before; got != 10 {
			t.Fatalf("%d looks over 10 busy seconds; want 10", got)
		}
		start := time.Now()
		cancel()
		<-ctx.Done()
		if took := time.Since(start); took > time.Second {
			t.Fatalf("the interrupt reached the bubble after %v of simulated time; want at most 1s", took)
		}
	})
}

// A virtual run whose pause, or whose replay's gap, is a year runs to its end in well under
// the watchdog's 30 s: two requests on one connection, the second a year after the first.
func TestYearLongGapRunsOnTheVirtualClock(t *testing.T) {
	dir := t.TempDir()
	log := `203.0.113.7 - - [02/Dec/2025:03:00:00 +0000] "GET /a HTTP/1.1" 200 200 "-" "poller/1.0" 0.001 1764644400.000
203.0.113.7 - - [02/Dec/2026:03:00:00 +0000] "GET /a HTTP/1.1" 200 200 "-" "poller/1.0" 0.001 1796180400.000
`
	doc := `name: year
server: {idle_timeout: none}
client: {idle_timeout: none}
expect: ["errors == 0", "connections == 1", "reused_requests == 1"]
variants:
  - name: pause
    load: {requests: 2, burst: 1, pause: 8760h}
  - name: replay
    load: {replay: access.log}
`
	for name, body := range map[string]string{"access.log": log, "year.yaml": doc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := scenario.LoadFiles([]string{filepath.Join(dir, "year.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 2 {
		t.Fatalf("%d runs; want 2", len(out.Runs))
	}
	for _, r := range out.Runs {
		if r.Status != report.StatusPass || r.Clock != "virtual" {
			t.Errorf("%s: status %s on the %s clock (%s); want a pass on the virtual clock", r.Variant, r.Status, r.Clock, r.Error)
		}
		if year := float64(8760 * time.Hour / time.Millisecond); r.Metrics.TotalMs < year {
			t.Errorf("%s: total_ms %v; want at least a year (%v)", r.Variant, r.Metrics.TotalMs, year)
		}
	}
}
