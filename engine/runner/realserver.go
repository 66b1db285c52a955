package runner

import (
	"errors"
	"fmt"

	"github.com/kalab-dev/kalab/engine/configure"

	"github.com/kalab-dev/kalab/engine/realserver"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

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
	"Events":               "server.events",
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
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			diags = append(diags, checkRun(sc.File, r, opt)...)
			diags = append(diags, checkBalancers(sc.File, r, opt)...)
		}
	}
	return diags.Sorted() // a problem of the file's shared part is found once per run
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

func checkRun(file string, r *scenario.Run, opt CheckOptions) scenario.Diagnostics {
	st := r.Settings
	if opt.TimeScale > 0 {
		st.TimeScale = opt.TimeScale
	}
	s := st.Server
	kind := configure.RealKind(s)
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
	if st.Balancer != nil && kind == realserver.URL {
		diags = append(diags, at("balancer", kindPath, "behind the balancer the server must be one kalab starts on loopback (server.exec or server.command), not a server.url; remove the balancer or start the server with server.command"))
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
	cfg, _ := configure.RealServer(st, shape.Scale(st.TimeScale), opt.AllowRemote)
	if kind == realserver.URL {
		if _, _, ok := r.Position("server.tls"); ok && cfg.TLS != s.TLS {
			diags = append(diags, at("server.tls", kindPath, "the URL's scheme says tls is %v; remove tls or make them agree", cfg.TLS))
		}
	}
	return append(diags, configDiags(realserver.Check(cfg), r, kind, kindPath, at)...)
}

// checkBalancers reports each real balancer of r (balancer.exec) that cannot be configured
// as the scenario asks, at the field it came from.
func checkBalancers(file string, r *scenario.Run, opt CheckOptions) scenario.Diagnostics {
	st := r.Settings
	if opt.TimeScale > 0 {
		st.TimeScale = opt.TimeScale
	}
	var diags scenario.Diagnostics
	bs := st.Balancers()
	for i, b := range bs {
		if !b.Real() {
			continue
		}
		path := scenario.BalancerPath(i, len(bs))
		cfg := configure.RealBalancer(b, shape.Scale(st.TimeScale), st.Env)
		cfg.Upstream = "127.0.0.1:1" // the next hop's address, known when the run starts
		err := realserver.Check(cfg)
		if err == nil {
			continue
		}
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, err := range errs {
			field, msg := path+".exec", err.Error()
			var fe *realserver.FieldError
			if errors.As(err, &fe) {
				msg = b.Exec + ": " + fe.Msg
				if fe.Field == "IdleTimeout" {
					field = path + ".idle_timeout"
				}
			}
			d := scenario.Diagnostic{File: file, Path: field, Message: msg}
			if line, col, ok := r.Position(field); ok {
				d.Line, d.Col = line, col
			} else if line, col, ok := r.Position(path + ".exec"); ok {
				d.Line, d.Col = line, col
			}
			if r.Variant != "default" {
				d.Message += " (in variant " + r.Variant + ")"
			}
			diags = append(diags, d)
		}
	}
	return diags
}
