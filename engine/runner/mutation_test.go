package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// mutation is a broken model, applied to every run of one bundled file: the file's finding
// must stop holding, which at least one of its checks must say.
type mutation struct {
	file, name string
	apply      func(*scenario.Settings)
}

var mutations = []mutation{
	{"01-reuse-by-rtt.yaml", "keep-alive ignored (every request on a new connection)", func(s *scenario.Settings) { s.Client.KeepAlive = false }},
	{"02-tls-resumption.yaml", "TLS sessions never resumed", func(s *scenario.Settings) { s.Client.SessionResumption = false }},
	{"03-concurrent-first-wave.yaml", "keep-alive ignored", func(s *scenario.Settings) { s.Client.KeepAlive = false }},
	{"04-stale-race.yaml", "no idle close on the server", func(s *scenario.Settings) { s.Server.IdleTimeout = 0 }},
	{"04-stale-race.yaml", "retry off", func(s *scenario.Settings) { s.Client.Retry.Attempts = 0 }},
	{"05-hint-gives-up-reuse.yaml", "Keep-Alive hint ignored", func(s *scenario.Settings) { s.Client.HonorHint = false }},
	{"06-process-per-request.yaml", "a process per request reuses anyway", func(s *scenario.Settings) { s.Client.KeepAlive = true }},
	{"07-close-vs-reuse-tcp.yaml", "Connection: close ignored", func(s *scenario.Settings) { s.Client.KeepAlive = true }},
	{"08-pool-thrash.yaml", "idle pool unlimited", func(s *scenario.Settings) { s.Client.MaxIdle = 0 }},
	{"09-http2-burst.yaml", "no HTTP/2 (one connection per request in flight)", func(s *scenario.Settings) { s.Server.HTTP = "1.1" }},
	{"10-lb-idle-mismatch.yaml", "no idle close at the balancer", func(s *scenario.Settings) { s.Server.IdleTimeout = 0 }},
	{"11-http2-cold-start.yaml", "Go shares one HTTP/2 connection from the start", func(s *scenario.Settings) { s.Client.MaxConns = 1 }},
	{"12-alb-backend-race.yaml", "no idle close on the backend", func(s *scenario.Settings) { s.Server.IdleTimeout = 0 }},
	{"13-large-response-slow-start.yaml", "no slow start (a window of 10,000 segments)", func(s *scenario.Settings) { s.Network.InitialWindow = 10000 }},
	{"13-large-response-slow-start.yaml", "no restart after idle", func(s *scenario.Settings) { s.Network.SlowStartAfterIdle = false }},
	{"14-listen-queue-burst.yaml", "no listen queue limit", func(s *scenario.Settings) { s.Server.Backlog = 0 }},
	{"15-nat-black-hole.yaml", "no middlebox (nothing forgets an idle flow)", func(s *scenario.Settings) { s.Middlebox = nil }},
	{"15-nat-black-hole.yaml", "TCP keepalive ignored", func(s *scenario.Settings) { s.Client.TCPKeepalive = scenario.TCPKeepalive{} }},
	{"16-fin-timing.yaml", "no idle close on the server", func(s *scenario.Settings) { s.Server.IdleTimeout = 0 }},
	{"23-alb-deregistration.yaml", "no deregistration delay", func(s *scenario.Settings) { s.Balancer.DeregistrationDelay = 0 }},
}

// TestSuiteFindingsCanFail runs each bundled file with its model broken and requires a
// failed check. It runs the whole suite again (a few minutes), so only on request:
//
//	KALAB_MUTATION=1 go test ./engine/runner -run TestSuiteFindingsCanFail -v -timeout 30m
//
// and the README's mutation table is its output.
func TestSuiteFindingsCanFail(t *testing.T) {
	if os.Getenv("KALAB_MUTATION") != "1" {
		t.Skip("runs the bundled suite once per mutation; set KALAB_MUTATION=1") // skip: opt-in: listed in .ci/allowed-skips
	}
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "..", "scenarios")
	covered := map[string]bool{}
	var table []string
	only := os.Getenv("KALAB_MUTATION_FILE") // one file, e.g. 04-stale-race.yaml
	for _, m := range mutations {
		covered[m.file] = true
		if only != "" && m.file != only {
			continue
		}
		p, err := scenario.LoadFiles([]string{filepath.Join(dir, m.file)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Scenarios[0].Runs {
			m.apply(&r.Settings)
		}
		o := opts(t)
		o.Parallel = 4
		o.SkipRequests = true
		o.LagTolerance = 10 // what .ci/run gates with: a loaded machine still gives verdicts
		out, err := Execute(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		var failed, noisy []string
		for _, r := range out.Runs {
			if r.Timing != nil && r.Timing.Noisy {
				noisy = append(noisy, r.Variant)
			}
			for _, c := range r.Checks {
				if c.Failed() {
					failed = append(failed, fmt.Sprintf("%s: %s (%s)", r.Variant, c.Expr, observed(c)))
				}
			}
		}
		for _, s := range out.Scenarios {
			for _, c := range s.Checks {
				if c.Failed() {
					failed = append(failed, fmt.Sprintf("compare: %s (%s)", c.Expr, observed(c)))
				}
			}
		}
		row := fmt.Sprintf("| `%s` | %s | %d | %s |", m.file, m.name, len(failed), firstOf(failed))
		table = append(table, row)
		t.Log(row)
		for _, f := range failed {
			t.Logf("  %s: %s", m.name, f)
		}
		switch {
		case len(failed) == 0 && len(noisy) > 0:
			// A noisy run gives no verdict, so its checks neither pass nor fail: that is
			// not evidence that the mutation went unnoticed.
			t.Errorf("%s with %s: no check failed, but %v gave no verdict (the machine could not hold their timing): rerun on a quieter machine", m.file, m.name, noisy)
		case len(failed) == 0:
			t.Errorf("%s with %s: every check still passed", m.file, m.name)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if only != "" {
		files = nil
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no mutation: add one that breaks its finding", filepath.Base(f))
		}
	}
	fmt.Println(strings.Join(table, "\n"))
}

func observed(c report.Check) string {
	var parts []string
	for k, v := range c.Observed {
		parts = append(parts, fmt.Sprintf("%s=%.4g", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func firstOf(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.ReplaceAll(list[0], "|", "\\|")
}
