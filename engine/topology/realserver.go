package topology

import (
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/realserver"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// RealKind says which real server a run's settings ask for; "" is the embedded server.
func RealKind(s scenario.Server) realserver.Kind {
	switch {
	case s.Exec != "":
		return realserver.Kind(s.Exec)
	case s.Command != "":
		return realserver.Command
	case s.URL != "":
		return realserver.URL
	}
	return ""
}

// RealServerConfig translates a run's server settings for a real server; ok is false when
// the run uses the embedded server.
func RealServerConfig(st scenario.Settings, sc shape.Scale, allowRemote bool) (realserver.Config, bool) {
	s := st.Server
	kind := RealKind(s)
	if kind == "" {
		return realserver.Config{}, false
	}
	cfg := realserver.Config{
		Kind:                 kind,
		Command:              s.Command,
		URL:                  s.URL,
		AllowRemote:          allowRemote,
		Env:                  st.Env,
		TLS:                  s.TLS,
		TLSVersion:           tlsVersion(s.TLSVersion),
		SessionTickets:       s.SessionTickets,
		HTTP2:                s.HTTP == "2",
		IdleTimeout:          sc.D(s.IdleTimeout),
		Hint:                 hintHeader(s),
		HintOnlyIfAsked:      s.HintOnlyIfAsked,
		MaxRequests:          s.MaxRequests,
		CloseEvery:           s.CloseEvery,
		MaxConcurrentStreams: s.HTTP2MaxStreams,
		Status:               s.Response.Status,
		BodyBytes:            s.Response.BodyBytes,
		Delay:                sc.D(s.Response.Delay),
	}
	if kind == realserver.URL {
		if u, err := url.Parse(s.URL); err == nil {
			cfg.TLS = u.Scheme == "https" // the scheme decides; Check reports a contradiction
		}
	}
	return cfg, true
}

// hintHeader is the Keep-Alive value a scenario asks for, in scenario seconds like the
// embedded server's (so a client reads the same hint at every time scale), without the
// max= part a server adds by itself.
func hintHeader(s scenario.Server) string {
	switch s.KeepaliveHint.Mode {
	case scenario.HintOn:
		if s.IdleTimeout > 0 {
			return "timeout=" + strconv.FormatInt(int64(s.IdleTimeout.D()/time.Second), 10)
		}
	case scenario.HintDuration:
		return "timeout=" + strconv.FormatInt(int64(s.KeepaliveHint.Duration.D()/time.Second), 10)
	case scenario.HintRaw:
		return s.KeepaliveHint.Raw
	}
	return ""
}

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
