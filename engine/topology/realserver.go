package topology

import (
	"sort"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/report"
)

// connLog collects the proxy's connection records of a run.
type connLog struct {
	mu   sync.Mutex
	recs []netsim.ConnRecord
}

func (c *connLog) add(r netsim.ConnRecord) {
	c.mu.Lock()
	c.recs = append(c.recs, r)
	c.mu.Unlock()
}

func (c *connLog) all() []netsim.ConnRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]netsim.ConnRecord(nil), c.recs...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// proxyConns converts the proxy's records to result lines (side "proxy") in scenario time:
// the connection truth for a server kalab does not control. A client's close after the
// load ended is the client closing its pool: reason end, as the embedded server says it.
func proxyConns(recs []netsim.ConnRecord, runStart, loadEnd time.Time, scale float64) []report.Conn {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / scale }
	reasons := map[netsim.Reason]string{netsim.ReasonIdle: "idle", netsim.ReasonAfterResponse: "after_response",
		netsim.ReasonReset: "reset", netsim.ReasonRefused: "refused", netsim.ReasonRunEnd: "end"}
	out := make([]report.Conn, 0, len(recs))
	for _, r := range recs {
		opened := max(r.Opened.Sub(runStart), 0)
		closed := ms(opened + r.Closed)
		c := report.Conn{Side: "proxy", ID: r.ID, OpenedMs: ms(opened), ClosedMs: &closed,
			Reason: reasons[r.Reason], BytesUp: r.BytesUp, BytesDown: r.BytesDown, FailedAttempt: r.FailedAttempt}
		if r.ClosedBy == netsim.SideServer || r.ClosedBy == netsim.SideClient {
			c.ClosedBy = string(r.ClosedBy)
		}
		if r.ClosedBy == netsim.SideClient && r.Reason == netsim.ReasonIdle && !r.Opened.Add(r.Closed).Before(loadEnd) {
			c.Reason = "end"
		}
		if r.Idle >= 0 {
			idle := ms(r.Idle)
			c.IdleMs = &idle
		}
		out = append(out, c)
	}
	return out
}

// idleCloseMetrics adds server_idle_closes, server_idle_close_ms.* and failed_attempts to
// flat.
func idleCloseMetrics(flat map[string]float64, recs []netsim.ConnRecord, scale float64) {
	var idle []float64
	failed := 0
	for _, r := range recs {
		if r.FailedAttempt {
			failed++
		}
		if r.ClosedBy == netsim.SideServer && r.Reason == netsim.ReasonIdle && r.Idle >= 0 {
			idle = append(idle, float64(r.Idle)/float64(time.Millisecond)/scale)
		}
	}
	flat["server_idle_closes"] = float64(len(idle))
	flat["failed_attempts"] = float64(failed)
	if len(idle) == 0 {
		return
	}
	sort.Float64s(idle)
	flat["server_idle_close_ms.min"] = idle[0]
	flat["server_idle_close_ms.p50"] = idle[(len(idle)-1)/2]
	flat["server_idle_close_ms.max"] = idle[len(idle)-1]
}
