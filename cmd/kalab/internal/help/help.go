// Package help writes the topics of kalab help: the metrics, the presets and what each was
// compared with, the real clients and servers, the verdicts and the clocks, each drawn from
// the engine's own registries where it has one.
package help

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Topics are the words kalab help takes besides a command.
var Topics = []string{"metrics", "presets", "clients", "servers", "verdicts", "clocks"}

// Write writes a topic to w; false when there is no such topic.
func Write(w io.Writer, topic string) bool {
	switch topic {
	case "metrics":
		metrics(w)
	case "presets":
		presets(w)
	case "clients":
		clients(w)
	case "servers":
		fmt.Fprint(w, servers)
	case "verdicts":
		fmt.Fprintln(w, report.Verdicts)
	case "clocks":
		fmt.Fprint(w, clocks)
	default:
		return false
	}
	return true
}

// metrics lists every metric with its unit and meaning, then the timing fields.
func metrics(w io.Writer) {
	fmt.Fprintln(w, "Metrics an expect or compare expression can read, per run; times are in scenario time.")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  METRIC\tUNIT\tMEANING")
	for _, d := range check.Docs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Name, d.Unit, d.Meaning)
	}
	_ = tw.Flush() // output for a terminal, as the Fprint lines around it
	fmt.Fprintln(w, "\nA compare expression reads another run's metric as variant('NAME').METRIC.")
	fmt.Fprint(w, Timing)
}

// presets lists every preset: what it models, its source, what it was verified and compared
// against, each version verified (one a line) and its settings.
func presets(w io.Writer) {
	for _, sec := range []struct {
		title string
		reg   map[string]*scenario.Preset
	}{{"Server presets (server.preset)", scenario.ServerPresets}, {"Client presets (client.preset)", scenario.ClientPresets},
		{"Balancer presets (balancer.preset)", scenario.BalancerPresets},
		{"Middlebox presets (middlebox.preset)", scenario.MiddleboxPresets}} {
		fmt.Fprintf(w, "%s:\n", sec.title)
		for _, name := range scenario.PresetNames(sec.reg) {
			p := sec.reg[name]
			verified := "not verified against the real program"
			if p.Verified != "" {
				verified = "verified against " + p.Verified
			}
			verified += "\n    " + comparedLine(p.Name, p.Verified, strings.HasPrefix(sec.title, "Server"))
			for _, c := range p.Checked {
				verified += fmt.Sprintf("\n    version verified: %s %s on %s by %s", c.Program, c.Version, c.On, c.By)
			}
			fmt.Fprintf(w, "\n  %s: %s\n    source: %s\n    %s\n", p.Name, p.Models, p.Source, verified)
			for _, line := range strings.Split(strings.TrimSpace(p.YAML), "\n") {
				fmt.Fprintf(w, "    | %s\n", line)
			}
			for _, r := range p.Releases {
				fmt.Fprintf(w, "    with client.version %s up to (not including) %s:\n", r.From, r.Before)
				for _, line := range strings.Split(strings.TrimSpace(r.YAML), "\n") {
					fmt.Fprintf(w, "    | %s\n", line)
				}
			}
		}
		fmt.Fprintln(w)
	}
}

// clients lists the bundled adapters with what each honours, and the error table.
func clients(w io.Writer) {
	fmt.Fprintln(w, "Real clients (client.exec): a bundled adapter by name, or {command: [program, args...]}.")
	fmt.Fprintln(w, "Exec runs run at time scale 1; a missing runtime makes the run not run: no verdict, exit 3")
	fmt.Fprintln(w, "unless --allow-missing (--require-clients: an error). See kalab help verdicts.")
	fmt.Fprintln(w, "kalab run starts an adapter only with --allow-exec=bundled, a command only with --allow-exec")
	fmt.Fprintln(w, "(KALAB_ALLOW_EXEC=bundled or 1); a program gets PATH, HOME, LANG, LC_ALL, TMPDIR, TZ, env: and KALAB_*.")
	for _, name := range execclient.Names() {
		a, _ := execclient.Lookup(name)
		fmt.Fprintf(w, "\n  %s: %s (needs %s)\n", a.Name, a.Models, a.Runtime)
		if a.Versions != "" {
			fmt.Fprintf(w, "    client.exec: {adapter: %s, version: V} -> %s\n", a.Name, a.Versions)
		}
		keys := make([]string, 0, len(a.Knobs))
		for k := range a.Knobs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "    client.%s -> %s\n", k, a.Knobs[k])
		}
		keys = keys[:0]
		for k := range a.Fixed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "    client.%s: only %s (%s)\n", k, a.Fixed[k].Value, a.Fixed[k].Why)
		}
	}
	fmt.Fprintln(w, "\nA runtime's error, as a client reports it, maps to a class by the first matching row:")
	for _, r := range execclient.Rules() {
		fmt.Fprintf(w, "  %-32s %-8s %s\n", r.Match, r.Class, r.Runtime)
	}
}

const servers = `Real servers behind the proxy (instead of the embedded server):

  server.exec: nginx     a generated nginx.conf on a free loopback port
      idle_timeout -> keepalive_timeout (ms); keepalive_hint -> its second parameter
      (timeout=N only); max_requests -> keepalive_requests (0: 2^30); tls -> the run's
      certificate, ssl_protocols, ssl_session_tickets; http "2" -> listen ... http2;
      http2_max_streams -> http2_max_concurrent_streams; response -> return STATUS "body"
      (a static file above 3,000 bytes, status 200 only). Refused: idle_timeout none,
      response.delay, close_every, hint_only_if_asked, a raw hint other than timeout=N.
  server.exec: node      kalab's bundled http/https script (node on PATH)
      idle_timeout -> keepAliveTimeout = idle_timeout - 1 s (Node closes an idle socket
      1 s after keepAliveTimeout: 2,002 ms for 1000 on Node 20.20.2); max_requests ->
      maxRequestsPerSocket; headersTimeout 60 s; the hint is Node's own when it matches
      timeout=floor(keepAliveTimeout/1000), else written by the handler (false: none);
      response status, body and delay. Refused: http "2", close_every, hint_only_if_asked,
      an idle_timeout of 1 s or less (after the time scale).
  server.exec: haproxy   a generated haproxy.cfg answering with http-request return
      idle_timeout -> timeout http-keep-alive (timeout client: max(60 s, 2 x idle));
      keepalive_hint -> an added Keep-Alive header; tls -> ssl crt, ssl-min/max-ver,
      no-tls-tickets. Refused: http "2", max_requests, close_every, response.delay.
  server.command: "CMD"  any server: {port} is its loopback port, {cert} and {key} the
      run's certificate files; only tls and http apply.
  server.url: URL        a server you run; the URL's path is the request path; loopback
      only unless --allow-remote; https is verified with the system's roots.

Each run's server is named (name and version) in its record; its generated configuration
and logs are kept under results/<run-id>/servers/<scenario>/<variant>/. Every connection
of the proxy is recorded in connections/<scenario>/<variant>.jsonl ("side": "proxy"): who
closed first (server or client; none when the run ended it), why (idle, after_response,
reset, refused, end), when, and after how long idle (idle_ms). server_idle_closes and
server_idle_close_ms.{min,p50,max} sum up the server's idle closes for every run, the
embedded server's too.
A field a server cannot express is a load error (file:line:col, exit 2).
kalab run starts server.exec only with --allow-exec=bundled, server.command only with
--allow-exec (KALAB_ALLOW_EXEC=bundled or 1); kalab validate lists what run would start.
`

// Timing describes the run record's timing fields, which are not metrics: no
// expression reads them; they say whether the run's figures can be believed.
const Timing = `
Each run record's timing (not metrics: no expression reads them) says whether its figures
can be believed, in real milliseconds:
  sources.<link|schedule|idle_close>  how late each timer source fired (n, p50, p99, max,
                                      mean) and the limits its checks set (set_by)
  sources.sched                       how long goroutines waited to run once they could
                                      (the runtime's sampled scheduling latency), judged
                                      at the max for count checks and for an expect on
                                      latency_ms.min or max
  sources.program                     exec runs: how late the client program began its
                                      requests against its own plan (the exec line's
                                      planned and start), judged on the schedule's limits
  noisy, reason, attempt, reruns      over a limit: no verdict; rerun beside the other
                                      reruns, then alone, each once a probe
                                      finds headroom, up to --attempts (3) in all, then
                                      exit 3; reruns lists each attempt and probe; the
                                      runs of a compare timing left unjudged are rerun
                                      alone once, and it is judged on the reruns
  cpu_wait_ms                         how long kalab's threads waited for a core during the
                                      run
  cpu_wait_neighbours_ms              the part of it other processes caused (all of it
                                      when beside_other_runs)
  beside_other_runs                   another run was in flight in this process: its
                                      threads' wait is not this run's own
  run_queue_ms                        kalab's threads' mean wait for a core per slice; its
                                      neighbours' share over 2 x link_trips + 1 wake-ups is
                                      what other processes could add to a request: an
                                      expect or compare on latency_ms it could flip is
                                      noisy or not evaluated
  latency_floor_ms                    one round trip of the link: no request is faster in
                                      the model, so no rule lowers a latency below it
  link_trips                          the link's trips a request waits on in turn; against
                                      a baseline, a time metric regressed by less than the
                                      extra wait per request plus the extra link lateness
                                      times these trips could add is noisy, not a failure
  cpu_pressure                        share of the run's wall time some task on the machine
                                      waited for a CPU (recorded, not judged)
  server_cpu_wait_ms                  a real server program's threads' wait for a core
  server_cpu_wait_neighbours_ms       the part of it other processes caused: how late they
                                      could have made its own timers (its idle close)
  timer_ranges                        per metric a timer no source watches produced (a real
                                      server's idle close, the counts a paced accept loop
                                      decides): how far down and up the CPU other
                                      processes took could have moved it; a check it could
                                      flip is noisy or not evaluated
  slack                               a real-clock run a compare's plan_reaches weighs: per
                                      request, in scenario ms, how long after the response
                                      before it (and the pause) it began (before_ms) and
                                      its time beyond the plan's round trips (during_ms);
                                      margin_ms widens every idle gap both ways
`

// clocks is `kalab help clocks`.
const clocks = `Two clocks run kalab's runs.

virtual  Every part of the run is kalab's own code or Go's: the model client or Go's
         Transport, the embedded server, the links, the balancer, the middlebox. They run
         inside Go's testing/synctest bubble over an in-memory network that carries the
         link's model (delay per direction, handshake, FIN and reset behind the data,
         jitter drawn from the seed, slow start, bandwidth, the listen queue, the kernel's
         TCP keepalive probes). Time is simulated: it moves only when every part waits, so
         a run is exact, gives the same figures on any machine at any load (save what
         hangs on the order Go runs goroutines that wake at one instant), and takes only
         the CPU its code needs (file 04's 1,000 requests over 6 minutes of model time run
         in well under a second). No run is noisy, none is rerun, and time_scale is not
         applied.
real     Loopback sockets in real time, for what only real time can show: real client
         programs (client.exec), real servers (server.exec, command, url), the caller's
         own Go client with kalabtest.RealClock (kalabtest runs it virtual otherwise), and
         the files that say clock: real because their finding is CPU or the kernel's own
         race (09, 14). The timing judge decides whether the machine held each run's timing.

A run goes virtual unless the file or --clock says otherwise, or a part of it needs
real time; its record says which clock ran it ("clock"), and a note says why a run that
could not go virtual ran real. clock: virtual on a run that cannot have it is refused
(the run is an engine error naming the part).

What the virtual clock cannot see: CPU time is free there (a TLS handshake, a response's
processing and a burst's accept loop take 0 ms unless the scenario models them, as
server.response.delay and server.accept_delay do), and the kernel's own counters are
not read (time_wait counts the closes that leave TIME_WAIT behind instead of reading the
kernel's table). A finding that depends on them needs the real clock: --clock real.

  kalab run scenarios --clock real      every run that can on the real clock
  kalab run file.yaml --clock virtual   every run that can on the virtual clock
`
