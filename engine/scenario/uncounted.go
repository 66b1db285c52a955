package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kalab-dev/kalab/engine/check"
)

// tlsCounts are the metrics a run counts from a TLS end kalab holds: its own server's, or
// its own client's.
var tlsCounts = []string{"tls_handshakes", "tls_resumed"}

// tlsUncounted reports whether nothing in a run can count its TLS handshakes: its client is
// a program (client.exec), its server a real one, and they speak TLS. kalab reads neither
// program's TLS state, and the link between them sees only ciphertext, so the metrics
// would read 0 whatever the programs did.
func tlsUncounted(st Settings) bool {
	return st.Client.Exec != nil && st.Server.Real() && (st.Server.TLS || strings.HasPrefix(st.Server.URL, "https:"))
}

// balancerCounts are the metrics a run counts from kalab's own balancers: a real balancer's
// own answers, re-sends and backend connections are not read.
var balancerCounts = []string{"balancer_connections", "balancer_requests", "balancer_errors", "balancer_closes",
	"balancer_retries", "backend_connections", "backend_reused_requests", "backend_errors", "backend_errors_by_class"}

// uncounted lists the metrics nothing in run st can count, and why; nil when it counts all.
func uncounted(st Settings) (metrics []string, why string) {
	if tlsUncounted(st) {
		metrics, why = tlsCounts, "its client is a program (client.exec) and its server a real one, "+
			"and kalab reads neither's TLS state (the link between them carries only ciphertext), so it would read 0 "+
			"whatever they did; check it with kalab's own server (no server.exec, command or url) or a model client"
	}
	for _, b := range st.Balancers() {
		if b.Real() {
			return append(metrics, balancerCounts...), "a balancer of its path is the real " + b.Exec +
				" (balancer.exec), whose own answers, re-sends and backend connections kalab does not read, so it would count only kalab's own balancers; " +
				"status_5xx counts the error answers the client saw, server_connections the connections the server accepted"
		}
	}
	return metrics, why
}

// reads reports whether a check's metric is one of metrics (backend_errors_by_class.reset
// is backend_errors_by_class's).
func reads(metrics []string, metric string) bool {
	base, _, _ := strings.Cut(metric, ".")
	return slices.Contains(metrics, metric) || slices.Contains(metrics, base)
}

// checkUncounted refuses an expect or a compare that reads a count its run cannot count (a
// check that would pass or fail on a 0 nobody measured).
func (l *loader) checkUncounted(sc *Scenario) {
	type blindRun struct {
		metrics []string
		why     string
	}
	blind := map[string]blindRun{}
	for _, r := range sc.Runs {
		if m, why := uncounted(r.Settings); len(m) > 0 {
			blind[r.Variant] = blindRun{m, why}
		}
	}
	if len(blind) == 0 {
		return
	}
	seen := map[string]bool{} // one diagnostic per place, metric and run
	for _, r := range sc.Runs {
		b, ok := blind[r.Variant]
		if !ok {
			continue
		}
		for _, a := range r.Expect {
			for _, ref := range a.Refs() {
				if reads(b.metrics, ref.Metric) {
					l.refuseUncounted(a, ref, r.Variant, "expect", b.why, seen)
				}
			}
		}
	}
	for _, a := range sc.Compare {
		for _, ref := range a.Refs() {
			if b, ok := blind[ref.Variant]; ok && reads(b.metrics, ref.Metric) {
				l.refuseUncounted(a, ref, ref.Variant, "compare", b.why, seen)
			}
		}
	}
}

// refuseUncounted reports ref's metric where a reads it: after the variant's name in a
// compare, anywhere in an expect.
func (l *loader) refuseUncounted(a Assertion, ref check.Ref, run, key, why string, seen map[string]bool) {
	metric, from := ref.Metric, 0
	for _, v := range a.Variants {
		if key == "compare" && v.Name == run {
			from = v.Offset
			break
		}
	}
	off := from
	if i := strings.Index(a.Source[from:], metric); i >= 0 {
		off += i
	}
	line, col := a.pos(off)
	at := fmt.Sprintf("%d:%d %s %s", line, col, metric, run)
	if seen[at] {
		return
	}
	seen[at] = true
	msg := fmt.Sprintf("%s is not measured in run %s: %s", metric, run, why)
	l.diags = append(l.diags, Diagnostic{File: l.file, Line: line, Col: col, Path: key, Message: msg})
}
