package judge

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// The edge rule. A count (errors, connections, reused requests) is decided request by
// request: a pause ends before or after an idle timeout, and whether the request raced the
// close depends on which side of the race window (timeout − RTT, timeout) the connection's
// idle time fell. Percentiles over every timer of a run miss the one late chunk that lands
// on such an edge (26.98 ms late at the max while the p99 read 3.81 ms, and a request the
// plan kept 181 ms from any race failed). So a real-time run whose checks read a count keeps
// every timer event later than edgeFloor (lag.Recorder.KeepEvents) and every request's
// span (SpanLog), and after the run each request is judged on its own edge: its idle time
// (from the end of the response before it on the same connection, or of its client's last
// response when it opened a new one) lies some margin from the nearest edge of a timeout
// that decides reuse; if the late events around it (from a round trip before that response
// ended to a round trip after the request began, or after the idle close it raced) add up to
// that margin, lateness could have carried it across, and the run is noisy. The same event
// away from every edge changes nothing.

// edgeFloor is the least lateness an event is kept for: below it the clocks themselves
// are not more precise (tolFloor), and the p99 limits judge the bulk.
const edgeFloor = tolFloor

// edgeEvents is how many of the largest late events around a request are added up: the
// chunk that ended the response before it, the timer that started it (or the chunk that
// carried it), and the idle close it raced.
const edgeEvents = 3

// A Span is one request of a real-time run, as the client saw it.
type Span struct {
	Start, End time.Time
	Conn       uint64
	Reused     bool
	Client     string // the replayed client; "" for a generated load
	Seq        int    // the request's sequence number
	Failed     bool   // the request failed
}

// SpanLog collects a run's spans; a nil *SpanLog ignores Add.
type SpanLog struct {
	mu    sync.Mutex
	spans []Span
}

// Add records one request's span.
func (l *SpanLog) Add(s Span) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.spans = append(l.spans, s)
	l.mu.Unlock()
}

// WatchEdges makes tm keep what the edge rule needs: late events of the model's timers
// and every request's span. Call it before a real-time run whose checks read a count.
func (t *Timers) WatchEdges() {
	t.Spans = &SpanLog{}
	for _, r := range t.TimerSources() {
		r.KeepEvents(edgeFloor)
	}
}

// ReadsCounts reports whether any check of the run reads a count, which the edge rule judges.
func (j *Judge) ReadsCounts() bool {
	return slices.ContainsFunc(j.reads, func(x read) bool { c, _ := metricClass(x.metric); return c == "count" })
}

// edge is one instant (real time, after the time scale) an idle time must not be carried
// across: a timeout that decides reuse, or the lower end of its race window.
type edge struct {
	at  time.Duration
	why string
}

// edgesOf lists the edges of the run's deciding timeouts (decidingTimeouts) in real time.
func edgesOf(st scenario.Settings) []edge {
	scale := shape.Scale(st.TimeScale)
	rtt := st.Network.RTT.D()
	var out []edge
	for _, t := range decidingTimeouts(st) {
		out = append(out, edge{scale.D(scenario.Duration(t.d)), fmt.Sprintf("%s %v", t.name, t.d)})
		if rtt > 0 && t.d > rtt {
			out = append(out, edge{scale.D(scenario.Duration(t.d - rtt)), fmt.Sprintf("%s %v less the RTT %v (the race window's start)", t.name, t.d, rtt)})
		}
	}
	return out
}

// EdgeFlip applies the edge rule to a run whose timers watched its edges (WatchEdges):
// why the run is noisy, or "" when every request's idle time stayed further from its edge
// than the lateness around it could move it.
// --lag-tolerance multiplies each margin; below 0 it judges nothing.
func (j *Judge) EdgeFlip(t *Timers, st scenario.Settings) string {
	if t.Spans == nil || j.factor < 0 {
		return ""
	}
	edges := edgesOf(st)
	if len(edges) == 0 {
		return ""
	}
	evs, dropped := t.lateEvents()
	if dropped > 0 {
		return fmt.Sprintf("%d late timer events were past the log's bound: the edge rule cannot place them", dropped)
	}
	if len(evs) == 0 {
		return ""
	}
	rtt := shape.Scale(st.TimeScale).D(st.Network.RTT)
	t.Spans.mu.Lock()
	spans := slices.Clone(t.Spans.spans)
	t.Spans.mu.Unlock()
	slices.SortFunc(spans, func(a, b Span) int { return a.Start.Compare(b.Start) })
	lastOn := map[uint64]Span{} // each connection's last request so far: HTTP/1.1 takes them in turn
	for i, s := range spans {
		prev, ok := lastOn[s.Conn]
		if !s.Reused || !ok || prev.End.After(s.Start) {
			prev, ok = before(spans[max(0, i-lookBack):i], s)
		}
		lastOn[s.Conn] = s
		if !ok {
			continue
		}
		idle := s.Start.Sub(prev.End)
		e := nearest(edges, idle)
		margin := absDur(idle - e.at)
		if j.factor > 0 {
			margin = time.Duration(float64(margin) * j.factor)
		}
		to := s.Start.Add(max(e.at-idle, 0)).Add(rtt)
		if late := largestSum(evs, prev.End.Add(-rtt), to, edgeEvents); late >= margin {
			return fmt.Sprintf("a request began %v after the response before it ended, %v from the edge at %v (%s); timers around it fired %v late in all, enough to carry it across",
				idle.Round(10*time.Microsecond), margin.Round(10*time.Microsecond), e.at, e.why, late.Round(10*time.Microsecond))
		}
	}
	return ""
}

// All returns the spans recorded so far, by sequence number; nil for a nil log.
func (l *SpanLog) All() []Span {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.spans)
	slices.SortFunc(out, func(a, b Span) int { return a.Seq - b.Seq })
	return out
}

// lateEvents merges the kept events of the model's timers, sorted by due time.
func (t *Timers) lateEvents() ([]lag.Event, uint64) {
	var all []lag.Event
	var dropped uint64
	for _, r := range t.TimerSources() {
		ev, d := r.Events()
		all, dropped = append(all, ev...), dropped+d
	}
	slices.SortFunc(all, func(a, b lag.Event) int { return a.Due.Compare(b.Due) })
	return all, dropped
}

// lookBack is how many requests before a new connection's first are searched for its
// client's last response: more than any concurrency whose requests end in the same instant.
const lookBack = 1024

// before finds, among the requests begun before s, the last of s's client to end before s
// began: where the idle time of a request on a new connection runs from.
func before(earlier []Span, s Span) (Span, bool) {
	var best Span
	ok := false
	for _, p := range earlier {
		if p.End.After(s.Start) || p.Client != s.Client {
			continue
		}
		if !ok || p.End.After(best.End) {
			best, ok = p, true
		}
	}
	return best, ok
}

// nearest returns the edge closest to idle.
func nearest(edges []edge, idle time.Duration) edge {
	best := edges[0]
	for _, e := range edges[1:] {
		if absDur(idle-e.at) < absDur(idle-best.at) {
			best = e
		}
	}
	return best
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// largestSum adds up the n largest lateness of the events due in [from, to]; evs is
// sorted by due time.
func largestSum(evs []lag.Event, from, to time.Time, n int) time.Duration {
	lo := sort.Search(len(evs), func(i int) bool { return !evs[i].Due.Before(from) })
	var top []time.Duration
	for _, e := range evs[lo:] {
		if e.Due.After(to) {
			break
		}
		top = append(top, e.Late)
	}
	slices.SortFunc(top, func(a, b time.Duration) int { return int(b - a) })
	var sum time.Duration
	for _, d := range top[:min(n, len(top))] {
		sum += d
	}
	return sum
}
