// Package kalabtest runs kalab scenarios from a Go test with your own HTTP client as the
// client: the scenario's server, simulated link and checks; your *http.Client or
// http.RoundTripper with your settings.
//
//	func TestStaleRace(t *testing.T) {
//		myClient := &http.Client{Transport: &http.Transport{IdleConnTimeout: 90 * time.Second}}
//		runs := kalabtest.Run(t, kalabtest.File("testdata/stale.yaml"), kalabtest.Client(myClient))
//		if n := runs.Variant("post").Metrics.Errors; n != 5 { ... }
//	}
//
// Each run becomes a subtest of t that fails for every check that did not hold (with its
// file:line:col), for an engine error, and for a run without a verdict.
//
// # The virtual clock
//
// By default each run goes on kalab's virtual clock, inside a testing/synctest bubble
// opened from t: your client dials through the run's in-memory network (kalab sets its
// DialContext), its TLS trusts the run's certificate, and every timer it has
// (IdleConnTimeout, ResponseHeaderTimeout, a context deadline, a retry's backoff) runs on
// the simulated clock. A run is exact, identical on every machine, and takes milliseconds
// whatever its simulated length. A client that reaches outside the bubble (a dialer of its
// own to real sockets, a real DNS lookup) fails its run with the goroutine that did it
// named, within a second. RealClock runs on real loopback sockets in real time instead.
//
// # Stability
//
// The package is pre-v1: Run, the Source kinds, the options, Results and the fields of
// report.Run and check.Metrics it returns are what kalab keeps working, but names may
// still change before v1; what changes is listed in the release notes.
package kalabtest

import (
	"crypto/tls"
	"net/http"
	"regexp"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// Option configures Run.
type Option func(*options)

type options struct {
	hc        *http.Client
	transport func(*tls.Config, DialFunc) http.RoundTripper
	filter    *regexp.Regexp
	parallel  int
	skipNone  bool // a run without a verdict skips its subtest instead of failing it
	real      bool // RealClock
}

// Client makes c the client of every run. Its Transport (an *http.Transport, or nil for
// http.DefaultTransport) is cloned for each run, told to trust the run's server and to use
// no proxy, and on the virtual clock to dial through the run's network; every other
// setting (keep-alive, idle timeout, pool sizes, timeouts, HTTP/2) is yours. c.Timeout
// becomes the per-request timeout. For any other RoundTripper (a retry wrapper, an
// instrumented Transport), use Transport.
func Client(c *http.Client) Option { return func(o *options) { o.hc = c } }

// Transport builds each run's RoundTripper yourself: tlsConfig trusts the run's server (use
// it, or clone it into your own TLS settings) and dial connects to the run's server (set it
// as your http.Transport's DialContext). A RoundTripper that dials by other means fails its
// run on the virtual clock.
func Transport(build func(tlsConfig *tls.Config, dial DialFunc) http.RoundTripper) Option {
	return func(o *options) { o.transport = build }
}

// RealClock runs on real loopback sockets in real time (time scale 1) instead of the
// virtual clock, with your client's own dialer: slower (a run takes its scenario's length)
// and subject to the machine's load (the timing judge may leave a run without a verdict).
func RealClock() Option { return func(o *options) { o.real = true } }

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

// Run loads the scenario, runs each of its runs with your client as a subtest of t and
// returns their records for further assertions. A scenario that does not load fails t at
// once with its file:line:col (or field path) messages. Each subtest fails for every check
// that did not hold or could not be evaluated, an engine error, and a run without a verdict
// (unless SkipNoVerdict); a compare check across runs that does not hold fails t.
//
// With a t that is not a *testing.T (no bubble can be opened from it) the runs go on the
// real clock and report to t directly.
func Run(t testing.TB, src Source, opts ...Option) Results {
	t.Helper()
	o := options{parallel: 1}
	for _, f := range opts {
		f(&o)
	}
	if o.hc == nil && o.transport == nil {
		o.hc = &http.Client{}
	}
	if o.parallel < 1 {
		o.parallel = 1
	}
	plan, err := src.load()
	if err != nil {
		t.Fatalf("kalabtest: scenario does not load:\n%v", err)
	}
	if tt, ok := t.(*testing.T); ok && !o.real {
		return o.runEach(tt, plan)
	}
	return o.runAll(t, plan)
}

// Results are the records of Run's runs, in plan order.
type Results []*report.Run

// Variant is the record of the run named variant (the scenario's variant name, or its
// matrix run's name); nil when there is none. Its Metrics hold the counts a check reads:
// Metrics.Errors, Metrics.HiddenRetries (Go's own re-sends of a request on a new
// connection), Metrics.Retries, Metrics.Connections, Metrics.ErrorsByClass.Reset, ...
// (docs/results.md lists every field).
func (rs Results) Variant(variant string) *report.Run {
	for _, r := range rs {
		if r.Variant == variant {
			return r
		}
	}
	return nil
}
