package probe

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Idle is what the probe found of the idle close.
type Idle struct {
	// Found is true when the close was bracketed: Low and High are then the bracket, as
	// idle time after the last response (for a close seen as it happened, the earliest and
	// latest moment it was seen on the connections that saw it).
	Found     bool
	Low, High time.Duration
	// Kind is how the close arrives: KindFIN or KindRST seen on an idle connection (the
	// server, or a box that resets), or Silent: nothing arrived and the next request
	// found the connection dead (Next says how: a timeout, a reset, an EOF).
	Kind string
	Next string
	// Above is set when no close was seen: every connection was still open after Above.
	Above time.Duration
	// Seen counts the connections that saw the close; Rounds the bisection rounds run.
	Seen, Rounds int
	// Limited says what cut the search short (the connection or time budget), "" if
	// nothing did.
	Limited string
}

// Silent is Idle.Kind for a close nothing announced: the next request failed.
const Silent = "silent"

// connectPace spaces the connections a round opens.
const connectPace = 10 * time.Millisecond

// trial is one connection held idle for gap.
type trial struct {
	gap  time.Duration
	open bool          // the request after the gap was answered
	kind string        // what ended it: KindFIN/KindRST/KindData seen while idle, or the next request's failure
	at   time.Duration // when a close was seen while idle
	idle bool          // the close was seen while idle (else on the next request)
	err  error         // the probe could not run the trial (budget, cancelled)
}

// idle bisects the idle timeout: each round holds Parallel connections idle for gaps
// spread over the bracket still open, reading each while it waits, so a FIN or RST is
// seen when it arrives; a connection still open at the end of its gap sends a request,
// whose answer (or silence) says whether the connection outlived the gap.
func (p *prober) idle(ctx context.Context) Idle {
	lo, hi := time.Duration(0), p.opt.MaxIdle
	var res Idle
	closedSeen := false
	gaps := firstGaps(p.opt.MaxIdle, p.opt.Parallel)
	for {
		res.Rounds++
		trials := p.round(ctx, gaps)
		var seen []time.Duration
		for _, tr := range trials {
			switch {
			case tr.err != nil:
				if res.Limited == "" && ctx.Err() == nil {
					res.Limited = tr.err.Error()
				}
			case tr.open:
				lo = max(lo, tr.gap)
			case tr.idle:
				seen = append(seen, tr.at)
				res.Kind = tr.kind
			default:
				closedSeen = true
				hi = min(hi, tr.gap)
				if res.Kind == "" || res.Kind == Silent {
					res.Kind, res.Next = Silent, tr.kind
				}
			}
		}
		if ctx.Err() != nil && res.Limited == "" {
			res.Limited = "time budget spent"
		}
		if len(seen) > 0 {
			// The close was seen as it happened: that is the measurement.
			res.Found, res.Low, res.High, res.Seen = true, slices.Min(seen), slices.Max(seen), len(seen)
			res.Limited = "" // measured, whatever budget the round's other trials met
			return res
		}
		if !closedSeen {
			res.Above = lo // every connection outlived its gap: open at lo, nothing seen past it
			return res
		}
		res.Low, res.High = lo, hi
		if hi-lo <= p.opt.Resolution || res.Limited != "" {
			res.Found = true
			return res
		}
		gaps = spread(lo, hi, p.opt.Parallel)
	}
}

// firstGaps is the first round's gaps: a halving ladder down from max, so that one round
// brackets any timeout up to max within a factor of two and a close seen while idle is
// measured at once.
func firstGaps(maxIdle time.Duration, n int) []time.Duration {
	gaps := make([]time.Duration, n)
	for i := range n {
		gaps[n-1-i] = maxIdle >> i
	}
	return gaps
}

// spread is n gaps evenly inside (lo, hi).
func spread(lo, hi time.Duration, n int) []time.Duration {
	gaps := make([]time.Duration, n)
	for i := range n {
		gaps[i] = lo + (hi-lo)*time.Duration(i+1)/time.Duration(n+1)
	}
	return gaps
}

// round runs one trial per gap at once. A trial whose request goes unanswered after gap g
// makes every trial with a longer gap moot, so those are cancelled.
func (p *prober) round(ctx context.Context, gaps []time.Duration) []trial {
	out := make([]trial, len(gaps))
	cancels := make([]context.CancelFunc, len(gaps))
	ctxs := make([]context.Context, len(gaps))
	for i := range gaps {
		ctxs[i], cancels[i] = context.WithCancel(ctx)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, g := range gaps {
		wg.Go(func() {
			// Polite pacing: a round's connections open connectPace apart.
			select {
			case <-time.After(time.Duration(i) * connectPace):
			case <-ctxs[i].Done():
			}
			tr := p.trial(ctxs[i], g)
			mu.Lock()
			defer mu.Unlock()
			if ctxs[i].Err() != nil && ctx.Err() == nil {
				tr.err = errMoot
			}
			out[i] = tr
			// Only a silent failure (no answer) makes longer gaps moot: after a close that
			// was announced, they see the FIN or RST themselves, which measures it.
			if tr.err == nil && !tr.open && !tr.idle && tr.kind == KindTimeout {
				for j, g2 := range gaps {
					if g2 > g {
						cancels[j]()
					}
				}
			}
		})
	}
	wg.Wait()
	for _, c := range cancels {
		c()
	}
	kept := out[:0]
	for _, tr := range out {
		if tr.err != errMoot {
			kept = append(kept, tr)
		}
	}
	return kept
}

// trial opens a connection, sends a request, holds it idle for gap and sends another.
func (p *prober) trial(ctx context.Context, gap time.Duration) trial {
	tr := trial{gap: gap}
	c, err := p.dial(ctx)
	if err != nil {
		tr.err = err
		return tr
	}
	defer c.close()
	if _, err := p.roundTrip(c); err != nil {
		tr.err = err
		return tr
	}
	k, at := c.watch(ctx, gap)
	if ctx.Err() != nil {
		tr.err = ctx.Err()
		return tr
	}
	if k != "" {
		tr.kind, tr.at, tr.idle = k, at, true
		return tr
	}
	_, err = p.roundTrip(c)
	if ctx.Err() != nil {
		tr.err = ctx.Err()
		return tr
	}
	tr.open = err == nil
	tr.kind = kind(err)
	return tr
}
