package probe

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// The model a written scenario runs: the close the probe measured (the server's, or a
// box's silent drop), the round trip, the hint, the request limit.
type model struct {
	close  time.Duration // the modelled close: the middle of the measured bracket
	rtt    time.Duration
	silent bool
}

func (r *Result) model() (model, bool) {
	if !r.Idle.Found {
		return model{}, false
	}
	mid := (r.Idle.Low + r.Idle.High) / 2
	return model{close: mid.Round(time.Millisecond), rtt: r.RTT.Round(time.Microsecond), silent: r.Idle.Kind == Silent}, true
}

var reName = regexp.MustCompile(`[^a-z0-9-]+`)

// WriteScenario writes a scenario that models the measured server with the client preset
// named, each measured field with a comment giving the date, the host and the evidence,
// and variants whose checks say what is safe: "race" (the preset keeping connections
// longer than the close, reusing one in the window the measurement predicts: one request
// written into a closed connection), "safe" (the preset with the client idle timeout the
// probe recommends: none), and the preset as it ships, to run and read. It returns an
// error when there is no close to model.
func (r *Result) WriteScenario(w io.Writer, preset string) error {
	m, ok := r.model()
	if !ok {
		return fmt.Errorf("no idle close was measured (%s): there is no race to model", strings.TrimPrefix(r.idleText(), "not seen: "))
	}
	if !m.silent && m.rtt <= 0 {
		return fmt.Errorf("the measured round trip is %s: the race window (close − RTT, close) is empty, so there is no race to model", m.rtt)
	}
	date := r.Start.UTC().Format("2006-01-02")
	ev := func(what string) string { return fmt.Sprintf("# measured %s on %s: %s", date, r.Host, what) }
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# yaml-language-server: $schema=https://raw.githubusercontent.com/kalab-dev/kalab/main/schema/scenario.schema.json")
	p("# Written by kalab probe %s on %s (%d connections, %d requests, %s).", r.URL, r.Start.UTC().Format(time.RFC3339), r.Conns, r.Sent, r.Elapsed.Round(time.Millisecond))
	p("name: probe-%s", strings.Trim(reName.ReplaceAllString(strings.ToLower(r.Host), "-"), "-"))
	p("description: >")
	p("  The server at %s as kalab probe measured it,", r.URL)
	p("  with the %s client. race: a client that keeps connections longer than the close", preset)
	p("  reuses one in the window the measurement predicts; safe: the client idle timeout the")
	p("  probe recommends; %s: the preset as shipped.", preset)
	p("clock: virtual               # every part is modelled: exact, in milliseconds")
	p("network:")
	p("  rtt: %s %s", yamlDur(m.rtt), ev(fmt.Sprintf("the larger of the median of %d TCP connects (%s) and the fastest request on a warm connection (%s)", r.RTTSamples, fmtDur(r.ConnectRTT), fmtDur(r.RequestRTT))))
	r.writeServer(p, m, ev)
	if m.silent {
		p("middlebox:")
		p("  idle_timeout: %s %s", yamlDur(m.close), ev(fmt.Sprintf("silent drop, bracket %s .. %s; the next request %s", fmtDur(r.Idle.Low), fmtDur(r.Idle.High), nextText(r.Idle.Next))))
		p("  on_expiry: drop")
	}
	pause, safe := r.racePause(m), r.safeIdle(m)
	p("client:")
	p("  preset: %s", preset)
	if m.silent {
		p("  timeout: %s               # bounds a request a silent drop leaves unanswered", yamlDur(max(2*pause, time.Second)))
	}
	p("load:")
	p("  requests: 2                # the second reuses the first's connection after the pause")
	p("  burst: 1")
	p("  pause: %s  # %s", yamlDur(pause), r.pauseWhy(m))
	p("variants:")
	p("  - name: race")
	p("    client: {keepalive: true, idle_timeout: none, honor_hint: false, tcp_keepalive: {idle: none}}")
	if m.silent {
		p("    expect: [\"errors_by_class.timeout == 1\"]   # the request went into the dropped flow: no answer")
	} else {
		p("    expect: [\"failed_attempts == 1\"]   # the request met the close the measurement predicts")
	}
	p("  - name: safe")
	p("    client: {idle_timeout: %s, honor_hint: false}   # the probe's rule: at or below close − RTT", yamlDur(safe))
	p("    expect: [\"failed_attempts == 0 && errors == 0\"]")
	p("  - name: %s", reName.ReplaceAllString(preset, "-"))
	p("    # the preset as shipped: kalab run says whether it races, kalab explain why")
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Result) writeServer(p func(string, ...any), m model, ev func(string) string) {
	p("server:")
	if r.TLSVersion != "" {
		p("  tls: true %s", ev("served over "+r.TLSVersion))
		if r.H2.Offered {
			p("  http: \"1.1\" %s", ev("HTTP/2 is offered by ALPN too; this model runs HTTP/1.1, the protocol of the race it shows"))
		}
	}
	if m.silent {
		p("  idle_timeout: none  # not seen: a box on the path drops idle flows first")
	} else {
		p("  idle_timeout: %s %s", yamlDur(m.close), ev(fmt.Sprintf("closed by %s at %s idle, seen on %d connections", r.Idle.Kind, span(r.Idle.Low, r.Idle.High), r.Idle.Seen)))
	}
	if r.Hint.Raw == "" {
		p("  keepalive_hint: false %s", ev("no Keep-Alive header"))
	} else {
		p("  keepalive_hint: %q %s", r.Hint.Raw, ev("the Keep-Alive header as sent"))
	}
	if r.Requests.Found {
		p("  max_requests: %d %s", r.Requests.Max, ev(r.Requests.How))
	} else {
		p("  max_requests: 0 %s", ev(fmt.Sprintf("no close within %d requests on one connection", r.Requests.Sent)))
	}
}

// racePause is the pause that puts the second request in the race: inside (close − RTT,
// close) for a server close, whose FIN the request then crosses; past the close for a
// silent drop, where any later request goes unanswered.
func (r *Result) racePause(m model) time.Duration {
	if m.silent {
		return m.close + max(r.Options.Resolution, time.Millisecond)
	}
	return (m.close - m.rtt/2).Round(time.Microsecond)
}

func (r *Result) pauseWhy(m model) string {
	if m.silent {
		return "past the box's drop"
	}
	return "inside the race window (close − RTT, close)"
}

// safeIdle is the client idle timeout the probe recommends (SafeClientIdle), and never
// past the modelled race window's start, close − RTT.
func (r *Result) safeIdle(m model) time.Duration {
	s, _ := r.SafeClientIdle()
	return max(min(s, (m.close-m.rtt-1).Truncate(time.Millisecond)), time.Millisecond)
}

// yamlDur writes d as a scenario duration in the largest whole unit.
func yamlDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d%time.Microsecond == 0:
		return fmt.Sprintf("%dus", d/time.Microsecond)
	}
	return fmt.Sprintf("%dns", d)
}
