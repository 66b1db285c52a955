// Package kalabtest runs kalab scenarios from a Go test with the test's own HTTP client
// as the client (the go-func implementation): the scenario's server, simulated link and
// checks, your *http.Client or http.RoundTripper with your settings.
//
//	func TestStaleRace(t *testing.T) {
//		kalabtest.Run(t, "testdata/stale.yaml", kalabtest.Client(myClient))
//	}
//
// Each run of the file becomes a subtest that fails with the file:line:col of every
// check that did not hold. Runs are real time (time scale 1), on loopback, with the
// server's own certificate, which kalabtest makes your client trust.
package kalabtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Option configures Run.
type Option func(*options)

type options struct {
	hc        *http.Client
	transport func(*tls.Config) http.RoundTripper
	filter    *regexp.Regexp
	parallel  int
	skipNone  bool // a run without a verdict skips its subtest instead of failing it
}

// Client makes c the client of every run. Its Transport (an *http.Transport, or nil for
// http.DefaultTransport) is cloned for each run, told to trust the run's server and to
// use no proxy; every other setting (keep-alive, idle timeout, pool sizes, HTTP/2) is
// yours. c.Timeout becomes the per-request timeout. For another RoundTripper, use
// Transport.
func Client(c *http.Client) Option { return func(o *options) { o.hc = c } }

// Transport builds each run's RoundTripper yourself; tlsConfig trusts the run's server
// (use it, or clone it into your own TLS settings).
func Transport(build func(tlsConfig *tls.Config) http.RoundTripper) Option {
	return func(o *options) { o.transport = build }
}

// Filter keeps the runs whose "scenario/variant" matches the regular expression.
func Filter(expr string) Option {
	return func(o *options) { o.filter = regexp.MustCompile(expr) }
}

// Parallel runs up to n runs at once (default 1: your client may share state).
func Parallel(n int) Option { return func(o *options) { o.parallel = n } }

// SkipNoVerdict makes a run without a verdict (the machine could not time it, even rerun
// alone, or a program it needs is not installed) skip its subtest with the reason instead of
// failing it, as kalab run --allow-missing accepts a run not run. Without it such a run fails:
// kalab run would exit 3, and go test does not pass where kalab run does not.
func SkipNoVerdict() Option { return func(o *options) { o.skipNone = true } }

// Run loads the scenario file, runs each of its runs with your client and reports each
// as a subtest; it returns the run records (metrics, checks) for further assertions. A
// file that does not load fails t at once with its file:line:col messages. A run without a
// verdict (the machine could not time it, even rerun alone, or it could not run here) fails
// its subtest with the reason, unless SkipNoVerdict.
func Run(t testing.TB, file string, opts ...Option) []*report.Run {
	t.Helper()
	o := options{parallel: 1}
	for _, f := range opts {
		f(&o)
	}
	if o.hc == nil && o.transport == nil {
		o.hc = &http.Client{}
	}
	plan, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatalf("kalabtest: %v", err)
	}
	out, err := runner.Execute(context.Background(), plan, runner.Options{
		Out: t.TempDir(), KalabVersion: "kalabtest", Log: zerolog.Nop(), Parallel: o.parallel,
		Filter: o.filter, SkipRequests: true, NewClient: o.newClient,
	})
	if err != nil {
		t.Fatalf("kalabtest: %v", err)
	}
	st, canRun := t.(*testing.T)
	for _, rec := range out.Runs {
		check := func(t testing.TB) {
			t.Helper()
			if why := noVerdict(rec); why != "" {
				if o.skipNone {
					t.Skipf("%s/%s: %s", rec.Scenario, rec.Variant, why)
				}
				t.Fatalf("%s/%s: no verdict: %s (kalab run would exit 3; kalabtest.SkipNoVerdict skips instead)", rec.Scenario, rec.Variant, why)
			}
			if rec.Status == report.StatusError || rec.Status == report.StatusInterrupted {
				t.Errorf("%s/%s: %s: %s", rec.Scenario, rec.Variant, rec.Status, rec.Error)
			}
			for _, c := range rec.Checks {
				if !c.Pass {
					t.Errorf("%s:%d:%d: %s/%s: %s (%s)%s", c.File, c.Line, c.Col, rec.Scenario, rec.Variant, c.Expr, report.Observed(c.Observed), suffix(c.Error))
				}
			}
		}
		if canRun {
			st.Run(rec.Variant, func(t *testing.T) { check(t) })
		} else {
			check(t)
		}
	}
	for _, s := range out.Scenarios {
		for _, c := range s.Checks {
			if !c.Pass {
				t.Errorf("%s:%d:%d: %s (compare): %s (%s)%s", c.File, c.Line, c.Col, s.Scenario, c.Expr, report.Observed(c.Observed), suffix(c.Error))
			}
		}
	}
	return out.Runs
}

// noVerdict says why a run has no verdict: its timing was too noisy, or it did not run here;
// "" when it has one.
func noVerdict(rec *report.Run) string {
	switch {
	case rec.Timing != nil && rec.Timing.Noisy:
		return rec.Error
	case rec.Status == report.StatusNotRun:
		return "not run: " + rec.Reason
	}
	return ""
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// newClient builds one run's go-func client from the runner's resolved config.
func (o *options) newClient(cfg client.Config) (client.Client, error) {
	tc := &tls.Config{RootCAs: cfg.RootCAs, ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12}
	if o.transport != nil {
		return client.NewFunc(cfg, o.transport(tc))
	}
	if o.hc.Timeout > 0 {
		cfg.Timeout = o.hc.Timeout
	}
	var tr *http.Transport
	switch base := o.hc.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = base.Clone()
	default:
		return nil, fmt.Errorf("kalabtest.Client: the client's Transport is a %T; use kalabtest.Transport to build it with kalab's TLS config", base)
	}
	tr.Proxy = nil // kalab's traffic stays on loopback
	if tr.TLSClientConfig != nil {
		mine := tr.TLSClientConfig.Clone()
		mine.RootCAs, mine.ServerName = tc.RootCAs, tc.ServerName
		tr.TLSClientConfig = mine
	} else {
		tr.TLSClientConfig = tc
	}
	return client.NewFunc(cfg, tr)
}
