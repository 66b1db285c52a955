package geometry

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/predict"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// The geometry behind middleboxes. The boxes stand next to the client (client -> boxes ->
// link -> server, engine/topology), so a box sees a burst's last response pass when the
// client reads it, the next request when the client sends it, and the server's FIN when it
// reaches the client. Each box forgets a flow on its own clock (engine/middlebox: its idle
// clock restarts with each segment of data, and a poll every Poll notices the timeout, so
// the box forgets a flow idle for its idle timeout within one poll after it), and a request
// sent after a pause g meets the first box on the path that forgot the flow (the oracle's
// rule, oracle.Plan.Forgetter, which this geometry reads rather than restates). A server
// that closes idle connections at S sends its FIN through the boxes at S: when no box has
// forgotten the flow by then, the client learns of the close and never sends on it; when
// one has, the FIN is lost and the client keeps a dead connection. So a request sent after
// a pause g that reuses its connection fails when a box forgot the flow by min(g, S), and
// otherwise races the server's close as behind no box (S − RTT < g < S).

// BoxParam splits a parameter under middlebox: middlebox.N.FIELD gives N as written (from
// 0, the box nearest the client; the caller checks it against the run's boxes) and FIELD,
// with indexed true; middlebox.FIELD gives FIELD alone, the lone box's. ok is false for a
// parameter outside middlebox.
func BoxParam(param string) (n int, field string, indexed, ok bool) {
	rest, found := strings.CutPrefix(param, "middlebox.")
	if !found {
		return 0, "", false, false
	}
	head, tail, dotted := strings.Cut(rest, ".")
	if i, err := strconv.Atoi(head); err == nil && dotted {
		return i, tail, true, true
	}
	return 0, rest, false, true
}

// path is a run's boxes as the oracle sees them (engine/predict's plan of the run) and the
// idle timeouts around them, in seconds (0: none).
type path struct {
	plan           oracle.Plan
	server, client float64
	rtt            float64
}

// newPath is the geometry's view of the run's boxes, or nil where it does not model them:
// behind a balancer, a box that resets both ends at the expiry itself (the client learns
// then), or a chain the client's TCP keepalive probes reach only the first box of.
func newPath(st scenario.Settings) *path {
	if st.Balancer != nil {
		return nil
	}
	p := predict.Plan(st)
	for _, b := range p.Boxes() {
		if !b.Drop && !b.ResetNext {
			return nil
		}
	}
	if len(p.Boxes()) > 1 && p.Client.KeepaliveIdle > 0 {
		return nil
	}
	return &path{plan: p, server: p.Server.IdleTimeout.Seconds(), client: p.Client.IdleTimeout.Seconds(), rtt: p.RTT.Seconds()}
}

func dur(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// met is the place of the box a request sent after a pause g meets on a forgotten flow, or
// -1: the first box on the path that forgot the flow by then, provided one forgot it before
// the server's FIN passed (at s; 0: the server never closes).
func (c *path) met(g, s float64) int {
	if s > 0 && g >= s {
		if i, _ := c.plan.Forgetter(dur(s)); i < 0 {
			return -1 // the FIN told the client first
		}
	}
	i, _ := c.plan.Forgetter(dur(g))
	return i
}

// races reports whether a pause g the boxes let through races the server's close at s.
func (c *path) races(g, s float64) bool { return s > 0 && g > s-c.rtt && g < s }

// reused reports whether the client still holds its connection after a pause g.
func (c *path) reused(g float64) bool { return c.client <= 0 || g < c.client }

// label names box i as the rules do: its place, its name (a preset's), its idle timeout
// (left out for the box swept) and what it does to a forgotten flow's next segment.
func (c *path) label(i int, swept bool) string {
	boxes := c.plan.Boxes()
	b := boxes[i]
	where := fmt.Sprintf("box %d of %d", i+1, len(boxes))
	if len(boxes) == 1 {
		where = "the box"
	}
	var parts []string
	custom := strings.HasPrefix(b.Name, "idle timeout ")
	switch {
	case swept && !custom:
		parts = append(parts, b.Name)
	case !swept && custom:
		parts = append(parts, "idle timeout "+Seconds(b.IdleTimeout.Seconds()))
	case !swept:
		parts = append(parts, b.Name, Seconds(b.IdleTimeout.Seconds()))
	}
	parts = append(parts, onExpiry(b))
	if swept {
		parts = append(parts, "its idle timeout swept")
	}
	return where + " (" + strings.Join(parts, ", ") + ")"
}

func onExpiry(b *oracle.Middlebox) string {
	if b.Drop {
		return "drop"
	}
	return "reset"
}

// fate is what box b does to the request it meets on a forgotten flow.
func fate(b *oracle.Middlebox) string {
	if b.Drop {
		return "drops the request (it hangs until the client's timeout)"
	}
	return "answers the request with a reset"
}

// behindBoxes is the geometry of a run behind middleboxes, for the idle timeouts that decide
// which tier a pause meets first: the client's, the server's, and one box's. nil for another
// parameter or a path it does not model.
func behindBoxes(param string, st scenario.Settings, pauses map[int64][]float64) *Prediction {
	c := newPath(st)
	if c == nil {
		return nil
	}
	pmax := time.Duration(st.Load.Pause.Max).Seconds()
	switch param {
	case "client.idle_timeout":
		return c.clientIdle(pauses)
	case "server.idle_timeout":
		return c.serverIdle(pauses, pmax)
	}
	n, field, indexed, ok := BoxParam(param)
	if boxes := len(c.plan.Boxes()); !ok || field != "idle_timeout" || n < 0 || n >= boxes || !indexed && boxes > 1 {
		return nil
	}
	return c.boxIdle(n, pauses, pmax)
}

// clientIdle: a client idle timeout C reuses a connection after a pause g < C, so C is safe
// up to the first of these seeds' pauses that fails (a box forgot the flow, or the server's
// close races it), and for any pauses at or below the tightest box's idle timeout (nothing
// is forgotten before it) and the server's idle − RTT.
func (c *path) clientIdle(pauses map[int64][]float64) *Prediction {
	first, firstBox := math.Inf(1), -1
	for _, ps := range pauses {
		for _, g := range ps {
			if i := c.met(g, c.server); (i >= 0 || c.races(g, c.server)) && g < first {
				first, firstBox = g, i
			}
		}
	}
	ti, tb := c.plan.Tightest()
	pr := &Prediction{Bound: math.Inf(1)}
	if tb != nil {
		e, _ := c.plan.Expiry(tb)
		pr.Bound = e.Seconds()
		pr.Rule = fmt.Sprintf("%s forgets first: it forgets a flow idle for %s (within one %s poll), then %s; a client idle timeout at or below %s gives the connection up before, so it never sends into a forgotten flow",
			c.label(ti, false), Seconds(pr.Bound), tb.Poll, fate(tb), Seconds(pr.Bound))
	}
	if c.server > 0 && c.server-c.rtt < pr.Bound {
		pr.Bound = c.server - c.rtt
		pr.Rule = fmt.Sprintf("server idle − RTT = %s − %s = %s, below every box's idle timeout: the server's FIN takes RTT/2 back, the request RTT/2 out, so a client idle timeout at or below it never sends into a close nor into a forgotten flow",
			Seconds(c.server), Seconds(c.rtt), Seconds(pr.Bound))
	}
	if math.IsInf(pr.Bound, 1) {
		return nil // the probes keep every flow and the server never closes: nothing fails
	}
	if !math.IsInf(first, 1) {
		pr.Edges = []float64{first}
		why := "it races the server's close"
		if firstBox >= 0 {
			_, b := c.plan.Forgetter(dur(first))
			why = fmt.Sprintf("%s has forgotten the flow and %s", c.label(firstBox, false), fate(b))
		}
		pr.Rule += fmt.Sprintf("; with these seeds' pauses the first to fail is a pause of %s: %s", Seconds(first), why)
	}
	return pr
}

// serverIdle: a server idle timeout S races a pause g the boxes let through when
// S − RTT < g < S, as behind no box; from the tightest box's idle timeout plus its poll the
// box forgets the flow before the server's FIN passes it, so every reused pause that
// outlasts the box meets a forgotten flow: the band is open above.
func (c *path) serverIdle(pauses map[int64][]float64, pmax float64) *Prediction {
	ti, tb := c.plan.Tightest()
	if tb == nil {
		return windows(pauses, 0, c.rtt, c.client, pmax, "client")
	}
	e, _ := c.plan.Expiry(tb)
	from := (e + tb.Poll).Seconds()
	type span struct{ lo, hi float64 }
	var spans []span
	forgotten := 0
	for _, ps := range pauses {
		for _, g := range ps {
			if !c.reused(g) {
				continue
			}
			if i, _ := c.plan.Forgetter(dur(g)); i >= 0 {
				forgotten++
				continue
			}
			spans = append(spans, span{g, g + c.rtt})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	pr := &Prediction{Bound: pmax + c.rtt}
	for i := 0; i < len(spans); {
		lo, hi := spans[i].lo, spans[i].hi
		for i++; i < len(spans) && spans[i].lo <= hi; i++ {
			hi = math.Max(hi, spans[i].hi)
		}
		switch {
		case forgotten > 0 && lo >= from:
		case forgotten > 0 && hi >= from:
			pr.Edges = append(pr.Edges, lo) // the band runs on into the boxes' open one
		default:
			pr.Edges = append(pr.Edges, lo, hi)
		}
	}
	pr.Rule = fmt.Sprintf("a server idle timeout S races a pause g when S − %s < g < S (RTT %s), as behind no box, while no box has forgotten the flow by g", Seconds(c.rtt), Seconds(c.rtt))
	if forgotten > 0 {
		if len(pr.Edges)%2 == 0 {
			pr.Edges = append(pr.Edges, from)
		}
		pr.Bound = from
		pr.Rule += fmt.Sprintf("; %s forgets first from S = %s (a flow idle %s, within one %s poll): it forgets the flow before the server's FIN passes it, the FIN is lost, and a request after a pause that outlasts the box meets the forgotten flow (%d of these seeds' pauses do); below %s the FIN tells the client first",
			c.label(ti, false), Seconds(from), Seconds(e.Seconds()), tb.Poll, forgotten, Seconds(e.Seconds()))
	}
	return pr
}

// without is the path with box n taken out.
func (c *path) without(n int) *path {
	rest := slices.Delete(slices.Clone(c.plan.Boxes()), n, n+1)
	o := *c
	o.plan.Middlebox, o.plan.Chain = nil, nil
	if len(rest) > 0 {
		o.plan.Middlebox = rest[0]
	}
	if len(rest) > 1 {
		o.plan.Chain = rest
	}
	return &o
}

// boxIdle: box n's idle timeout T. A pause another box forgets, or one that races the
// server's close, fails whatever T (the band covers the axis); otherwise T fails while the
// box forgets the flow before a reused pause ends and before the server's FIN passes it:
// below the longest min(g, S) of these seeds' pauses, within one of its polls.
func (c *path) boxIdle(n int, pauses map[int64][]float64, pmax float64) *Prediction {
	others, sEff := c.without(n), math.Inf(1)
	if c.server > 0 {
		sEff = c.server
	}
	edge, fixed, fixedBox := -1.0, math.Inf(1), -1
	for _, ps := range pauses {
		for _, g := range ps {
			if !c.reused(g) {
				continue
			}
			i := others.met(g, c.server)
			if (i >= 0 || c.races(g, c.server)) && g < fixed {
				fixed, fixedBox = g, i
			}
			edge = math.Max(edge, math.Min(g, sEff))
		}
	}
	swept := c.label(n, true)
	if !math.IsInf(fixed, 1) {
		who, what := "the server's close", fmt.Sprintf("races it (server idle − RTT < g < server idle, %s − %s)", Seconds(c.server), Seconds(c.rtt))
		if fixedBox >= 0 {
			at := fixedBox
			if at >= n {
				at++
			}
			_, b := others.plan.Forgetter(dur(fixed))
			e, _ := c.plan.Expiry(b)
			who, what = c.label(at, false), fmt.Sprintf("outlasts it (%s, within one %s poll), and the box %s", Seconds(e.Seconds()), b.Poll, fate(b))
		}
		return &Prediction{Edges: []float64{0}, Rule: fmt.Sprintf("%s decides whatever the idle timeout of %s: a pause of %s %s, unless a box before it on the path forgot the flow too and meets the request first; so no value of the swept box's idle timeout passes",
			who, swept, Seconds(fixed), what)}
	}
	if edge < 0 {
		return nil // no pause reuses a connection: no box meets a request
	}
	pr := &Prediction{Edges: []float64{0, edge}, Bound: math.Min(pmax, sEff)}
	if c.client > 0 {
		pr.Bound = math.Min(pr.Bound, c.client)
	}
	b := c.plan.Boxes()[n]
	until := "the longest of these seeds' pauses that reuse a connection"
	if edge == c.server {
		until = "the server's idle timeout, whose FIN tells the client of a longer pause unless the box forgot the flow first"
	}
	pr.Rule = fmt.Sprintf("%s forgets first while its idle timeout T is below %s, %s: it forgets the flow within one poll after T (T/100, 1ms to 100ms), then %s",
		swept, until, Seconds(edge), fate(b))
	if len(c.plan.Boxes()) > 1 {
		var rest []string
		for i := range c.plan.Boxes() {
			if i != n {
				rest = append(rest, c.label(i, false))
			}
		}
		pr.Rule += "; no other box forgets these pauses (" + strings.Join(rest, ", ") + ")"
	}
	pr.Rule += fmt.Sprintf("; a T at or above %s forgets none", Seconds(edge))
	return pr
}

// Boxes describes the run's boxes in path order, for a sweep's context: each box's preset,
// idle timeout and on_expiry, the swept one's idle timeout as "swept" (its file value is
// not what ran); "" without boxes.
func Boxes(st scenario.Settings, param string) string {
	boxes := st.Middleboxes()
	if len(boxes) == 0 {
		return ""
	}
	n, field, indexed, ok := BoxParam(param)
	var out []string
	for i, b := range boxes {
		idle := b.IdleTimeout.String()
		if ok && field == "idle_timeout" && (!indexed || n == i) {
			idle = "swept"
		}
		s := idle + " " + b.OnExpiry
		if b.Preset != "" {
			s = b.Preset + " " + s
		}
		out = append(out, s)
	}
	if len(out) == 1 {
		return "middlebox " + out[0]
	}
	return "middleboxes " + strings.Join(out, " -> ")
}
