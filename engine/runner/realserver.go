package runner

import (
	"errors"
	"fmt"
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

// realKind says which real server a run's settings ask for; "" is the embedded server.
func realKind(s scenario.Server) realserver.Kind {
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

// realServerConfig translates a run's server settings for a real server; ok is false when
// the run uses the embedded server.
func realServerConfig(st scenario.Settings, sc shape.Scale, allowRemote bool) (realserver.Config, bool) {
	s := st.Server
	kind := realKind(s)
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

// realFieldPaths maps a realserver.Config field to the scenario field it came from.
var realFieldPaths = map[string]string{
	"IdleTimeout":          "server.idle_timeout",
	"Hint":                 "server.keepalive_hint",
	"HintOnlyIfAsked":      "server.hint_only_if_asked",
	"MaxRequests":          "server.max_requests",
	"CloseEvery":           "server.close_every",
	"MaxConcurrentStreams": "server.http2_max_streams",
	"HTTP2":                "server.http",
	"TLSVersion":           "server.tls_version",
	"Status":               "server.response.status",
	"BodyBytes":            "server.response.body_bytes",
	"Delay":                "server.response.delay",
}

// unconfigured are the server fields that mean nothing for a server kalab does not
// configure (a command or a URL).
var unconfigured = []string{"preset", "tls_version", "session_tickets", "idle_timeout", "keepalive_hint",
	"hint_only_if_asked", "max_requests", "close_every", "http2_max_streams", "response"}

// CheckOptions are the command-line settings that decide whether a plan can run.
type CheckOptions struct {
	AllowRemote bool    // --allow-remote
	TimeScale   float64 // --time-scale, 0 for each file's own
}

// Check reports, as load errors with file:line:col, every run whose real server cannot do
// what the scenario asks: a field nginx, Node or HAProxy cannot express, fields set for a
// server kalab does not configure, a URL off loopback without AllowRemote. It runs
// nothing; an empty result means the plan can start.
func Check(plan *scenario.Plan, opt CheckOptions) scenario.Diagnostics {
	var diags scenario.Diagnostics
	seen := map[string]bool{}
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			for _, d := range checkRun(sc.File, r, opt) {
				if key := d.String(); !seen[key] {
					seen[key] = true
					diags = append(diags, d)
				}
			}
		}
	}
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i], diags[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return diags
}

func checkRun(file string, r *scenario.Run, opt CheckOptions) scenario.Diagnostics {
	st := r.Settings
	if opt.TimeScale > 0 {
		st.TimeScale = opt.TimeScale
	}
	s := st.Server
	kind := realKind(s)
	if kind == "" {
		return nil
	}
	where := ""
	if r.Variant != "default" {
		where = " (in variant " + r.Variant + ")"
	}
	at := func(path, fallback, format string, args ...any) scenario.Diagnostic {
		d := scenario.Diagnostic{File: file, Path: path, Message: fmt.Sprintf(format, args...) + where}
		if line, col, ok := r.Position(path); ok {
			d.Line, d.Col = line, col
		} else if line, col, ok := r.Position(fallback); ok {
			d.Line, d.Col = line, col
		}
		return d
	}
	var diags scenario.Diagnostics
	set := 0
	for _, k := range []string{s.Exec, s.Command, s.URL} {
		if k != "" {
			set++
		}
	}
	kindPath := map[realserver.Kind]string{realserver.Command: "server.command", realserver.URL: "server.url"}[kind]
	if kindPath == "" {
		kindPath = "server.exec"
	}
	if set > 1 {
		return append(diags, at(kindPath, "server", "server.exec, server.command and server.url are three ways to name the server: give one"))
	}
	if st.Balancer != nil {
		diags = append(diags, at("balancer", kindPath, "a real server behind the balancer is not supported yet: the balancer-server link would have to carry its connection truth; use the embedded server there"))
	}
	if st.Client.Exec != nil {
		diags = append(diags, at("client.exec", kindPath, "a real client (client.exec) needs kalab's embedded server, which stamps the connection ids it reports; it cannot run against %s", kindPath))
	}
	if kind == realserver.Command || kind == realserver.URL {
		for _, f := range unconfigured {
			if _, _, ok := r.Position("server." + f); ok {
				diags = append(diags, at("server."+f, kindPath, "kalab does not configure a server started by %s; remove this field (the server's own settings apply)", kindPath))
			}
		}
	}
	cfg, _ := realServerConfig(st, shape.Scale(st.TimeScale), opt.AllowRemote)
	if kind == realserver.URL {
		if _, _, ok := r.Position("server.tls"); ok && cfg.TLS != s.TLS {
			diags = append(diags, at("server.tls", kindPath, "the URL's scheme says tls is %v; remove tls or make them agree", cfg.TLS))
		}
	}
	return append(diags, configDiags(realserver.Check(cfg), r, kind, kindPath, at)...)
}

// configDiags turns what realserver.Check found into diagnostics, each at the scenario
// field it came from.
func configDiags(err error, r *scenario.Run, kind realserver.Kind, kindPath string, at func(path, fallback, format string, args ...any) scenario.Diagnostic) scenario.Diagnostics {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap() // every problem at once
	}
	var diags scenario.Diagnostics
	for _, err := range errs {
		var fe *realserver.FieldError
		if !errors.As(err, &fe) || realFieldPaths[fe.Field] == "" {
			diags = append(diags, at(kindPath, "server", "%v", err))
			continue
		}
		path := realFieldPaths[fe.Field]
		msg := fe.Msg
		if _, _, ok := r.Position(path); !ok {
			msg += fmt.Sprintf(" (the value comes from the defaults or the preset; set %s)", path)
		}
		diags = append(diags, at(path, kindPath, "%s: %s", kind, msg))
	}
	return diags
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
