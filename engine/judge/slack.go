package judge

import (
	"math"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// SlackPlan is what the slack of a run's requests is measured against, in real time (after
// the time scale): the pauses between bursts, a round trip with the server's delay, and
// how many round trips a new connection's handshakes take at the least.
type SlackPlan struct {
	Burst      int
	Pauses     []time.Duration
	RTT, Delay time.Duration
	// Handshakes is the round trips a new connection takes before its request: the
	// connect's, and TLS's (one for TLS 1.3, and for TLS 1.2 at the least, when it resumes).
	Handshakes int
	Scale      float64 // the run's time scale: slack is kept in scenario time
}

// SlackOf measures, from a real-clock run's spans (SpanLog.All), how much longer than its
// plan the run took around each request: what engine/oracle's Reach lets a gap stretch
// by. A request's slack before is its start less the end of the request before it (less
// the pause, when it opens a burst); its slack during is its latency less the round trips
// the plan gives it (one for a reused connection, the handshakes' more for a new one, and
// for a failed request one: the most the race it lost can take), never negative; its slack
// before is negative when the program ended a pause early (Node's timers count whole
// milliseconds).
// margin (real time) widens each gap's range both ways (report.Slack). Nil when a request is missing
// from spans (the run did not complete) or two overlap (more than one in flight).
func SlackOf(spans []Span, p SlackPlan, margin time.Duration) *report.Slack {
	scale := p.Scale
	if scale <= 0 {
		scale = 1
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)/scale) / 1000 }
	out := &report.Slack{BeforeMs: make([]float64, len(spans)), DuringMs: make([]float64, len(spans)), MarginMs: ms(margin)}
	for n, s := range spans {
		if s.Seq != n {
			return nil
		}
		if n > 0 {
			gap := s.Start.Sub(spans[n-1].End)
			if gap < 0 {
				return nil
			}
			if b := p.Burst; b > 0 && n%b == 0 && n/b-1 < len(p.Pauses) {
				gap -= p.Pauses[n/b-1] // below zero when the program's pause ended early
			}
			out.BeforeMs[n] = ms(gap)
		}
		trips := 1
		if !s.Reused && !s.Failed {
			trips += p.Handshakes
		}
		floor := time.Duration(trips) * p.RTT
		if !s.Failed {
			floor += p.Delay
		}
		out.DuringMs[n] = ms(max(s.End.Sub(s.Start)-floor, 0))
	}
	return out
}

// ClockPrecision is the margin of a run whose timers the edge rule judged (EdgeFlip): Go's
// timers are good to about a millisecond, and a request's start and end are read on them.
const ClockPrecision = time.Millisecond

// Durations turns a slack's milliseconds back into durations (scenario time).
func Durations(ms []float64) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, v := range ms {
		out[i] = time.Duration(v * float64(time.Millisecond))
	}
	return out
}
