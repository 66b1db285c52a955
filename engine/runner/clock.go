package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/kalab-dev/kalab/engine/internal/startcheck" // refuses a start without descriptors, first

	"github.com/kalab-dev/kalab/engine/topology"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/internal/vclock"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// virtualStall is how long a virtual run may go without any event on its network, in real
// time, before its watchdog ends it: far beyond any CPU work between two events.
const virtualStall = 30 * time.Second

// virtualOutside is how long a virtual run may go without any event before its watchdog
// looks for a goroutine waiting on real I/O (a caller's client with a dialer of its own, a
// DNS lookup): nothing in the bubble can end such a wait, so the run ends at once, naming it.
const virtualOutside = 250 * time.Millisecond

// inBubble runs f on the virtual clock with a fresh in-memory network, which it closes
// when f returns; the run's own hops are closed by f. ctx's cancellation (an interrupt)
// reaches f's context within a second of simulated time of the network's last event. A
// bubble that stops advancing ends with the watchdog's error naming what blocked it.
func inBubble(ctx context.Context, host *vclock.Host, name string, f func(ctx context.Context, n *vnet.Network), extra ...vclock.Option) error {
	var progress atomic.Int64
	return host.Run(name, func() {
		n := vnet.New()
		bctx, stop, wake := bubbleContext(ctx)
		n.SetOnEvent(func() { progress.Add(1); wake() })
		n.Order(vclock.Settle) // same-instant events in the network's order, not the scheduler's
		// The run is over when f returns: its records are taken, whatever closing the network says.
		defer func() { _ = n.Close() }()
		defer stop()
		f(bctx, n)
	}, append([]vclock.Option{vclock.Progress(&progress), vclock.StallAfter(virtualStall), vclock.OutsideAfter(virtualOutside)}, extra...)...)
}

// maxCancelPoll is the longest simulated wait between two looks at the outer context while
// the run's network is quiet: a pause of a year is then some nine thousand looks, not
// thirty million.
const maxCancelPoll = time.Hour

// bubbleContext is a context of the bubble that follows outer's cancellation: a channel
// made outside a bubble cannot be waited on durably inside one, so a watcher in the
// bubble looks at outer once per simulated second while the model has events (wake, called
// at each one), and twice as far apart after each second without one, up to maxCancelPoll.
// Looks that cost real time only when time jumps are what would delay an interrupt: a
// quiet model's next event jumps the clock at once, and its first event wakes the watcher.
func bubbleContext(outer context.Context) (ctx context.Context, stop, wake func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	events := make(chan struct{}, 1) // made in the bubble: waited on durably
	go func() {
		poll := time.Second
		t := time.NewTimer(poll)
		defer t.Stop()
		for {
			var quietEnd chan struct{} // a model with events leaves them for the next look
			if poll > time.Second {
				quietEnd = events
			}
			select {
			case <-done:
				return
			case <-quietEnd: // busy again: look every second
				poll = time.Second
				t.Reset(poll)
			case <-t.C:
				if outer.Err() != nil {
					cancel(context.Cause(outer))
					return
				}
				select {
				case <-events: // the model had events since the last look
					poll = time.Second
				default:
					poll = min(2*poll, maxCancelPoll)
				}
				t.Reset(poll)
			}
		}
	}()
	wake = func() {
		select {
		case events <- struct{}{}:
		default:
		}
	}
	return ctx, func() { close(done); cancel(nil) }, wake
}

// driveVirtual drives the run inside a bubble on the virtual clock: the same topology
// and load as drive, over the bubble's in-memory network, and says how much simulated time
// it took. A bubble the watchdog ended leaves its goroutines behind; the run is then an
// engine error and its figures are not read.
func driveVirtual(ctx context.Context, w *report.Writer, c *compile.Run, opt Options, log zerolog.Logger, tm *judge.Timers) (check.Metrics, topology.Result, time.Duration, error) {
	sc, r := c.Scenario, c.Source
	type result struct {
		m     check.Metrics
		co    topology.Result
		model time.Duration
		err   error
	}
	var res result
	probe := metrics.StartProcProbe(metrics.DefaultProbeInterval) // its sampler lives outside any bubble
	var extra []vclock.Option
	if opt.NewClient != nil {
		// The caller's client may wait on a goroutine of its own outside the bubble; kalab's
		// own waits on outside channels (a progress bar's) are brief, and not looked for.
		extra = append(extra, vclock.OutsideChannels())
	}
	err := inBubble(ctx, opt.Host, sc.Name+"/"+r.Variant, func(bctx context.Context, n *vnet.Network) {
		var out result
		start := time.Now() // the bubble's clock
		out.m, out.co, out.err = topology.Drive(bctx, &topology.Run{Run: c, W: w,
			Options: opt.topology(n), Log: log, Timers: tm, Probe: probe})
		out.model = time.Since(start)
		res = out
	}, extra...)
	probe.Stop()
	if err != nil {
		return check.Metrics{}, topology.Result{}, 0, err
	}
	return res.m, res.co, res.model, res.err
}

// OutsideMarker is in the error of a virtual run that ended because a goroutine of it
// waited on real I/O (a caller's client with a dialer of its own).
const OutsideMarker = vclock.OutsideText

// Host runs runs on the virtual clock (Options.Host).
type Host = vclock.Host

// HostMain runs main with a Host, inside the harness that gives this process a virtual
// clock, and exits with main's code: the kalab binary's entry. A process that cannot start
// for lack of file descriptors has already exited 3 (no verdict) with a message, in
// startcheck's init, before any package's initialization could need a descriptor.
func HostMain(main func(h *Host) int) {
	vclock.Main(main)
}

// TestHost is a Host for a Go test: each virtual run is a subtest of t.
func TestHost(t *testing.T) *Host { return vclock.FromTest(t) }
