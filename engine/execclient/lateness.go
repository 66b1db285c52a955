package execclient

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// lateness gathers how late a program began its requests against its own schedule, the
// real client's counterpart of the model's schedule timers. A line's "planned" (epoch ms)
// says when the program meant to start the request (the end of the pause before it, or
// of the request before it on the same worker); its lateness is start - planned. For a
// program that does not say, the first request of each burst after a pause is judged
// against the schedule kalab gave it: the previous burst's last end plus the pause.
type lateness struct {
	plan    Plan
	planned map[int]time.Time
	start   map[int]time.Time
	end     map[int]time.Time
}

func newLateness(p Plan) *lateness {
	return &lateness{plan: p, planned: map[int]time.Time{}, start: map[int]time.Time{}, end: map[int]time.Time{}}
}

// add notes one reported request and the planned start of its line, if any.
func (l *lateness) add(line []byte, ev client.Event) {
	l.start[ev.Seq], l.end[ev.Seq] = ev.Start, ev.Start.Add(ev.Latency)
	var p struct {
		Planned *float64 `json:"planned"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &p) == nil && p.Planned != nil {
		l.planned[ev.Seq] = epochMs(*p.Planned)
	}
}

// result returns each judged request's lateness (never negative: a program's clock reads
// to about a microsecond, so "early" is rounding), and how many of them kalab derived from
// the schedule because the program did not say.
func (l *lateness) result() (late []time.Duration, derived int) {
	for i := 0; i < l.plan.Requests; i++ {
		start, ok := l.start[i]
		if !ok {
			continue
		}
		planned, ok := l.planned[i]
		if !ok {
			if planned, ok = l.afterPause(i); !ok {
				continue
			}
			derived++
		}
		late = append(late, max(start.Sub(planned), 0))
	}
	return late, derived
}

// afterPause is when request i was due if it opens a burst after a pause: the last end of
// the burst before it plus the pause. ok is false for other requests, and when a request
// of the burst before was not reported.
func (l *lateness) afterPause(i int) (time.Time, bool) {
	b := l.plan.Burst
	if b <= 0 || i == 0 || i%b != 0 || i/b-1 >= len(l.plan.PausesMs) {
		return time.Time{}, false
	}
	var last time.Time
	for j := i - b; j < i; j++ {
		e, ok := l.end[j]
		if !ok {
			return time.Time{}, false
		}
		if e.After(last) {
			last = e
		}
	}
	return last.Add(time.Duration(l.plan.PausesMs[i/b-1] * float64(time.Millisecond))), true
}
