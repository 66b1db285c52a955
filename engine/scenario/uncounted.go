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

// checkUncounted refuses an expect or a compare that reads the TLS counts of a run that
// cannot count them: a check that would pass or fail on a 0 nobody measured.
func (l *loader) checkUncounted(sc *Scenario) {
	blind := map[string]bool{}
	for _, r := range sc.Runs {
		if tlsUncounted(r.Settings) {
			blind[r.Variant] = true
		}
	}
	if len(blind) == 0 {
		return
	}
	seen := map[string]bool{} // one diagnostic per place, metric and run
	for _, r := range sc.Runs {
		if !blind[r.Variant] {
			continue
		}
		for _, a := range r.Expect {
			for _, ref := range a.Refs() {
				if slices.Contains(tlsCounts, ref.Metric) {
					l.refuseUncounted(a, ref, r.Variant, "expect", seen)
				}
			}
		}
	}
	for _, a := range sc.Compare {
		for _, ref := range a.Refs() {
			if blind[ref.Variant] && slices.Contains(tlsCounts, ref.Metric) {
				l.refuseUncounted(a, ref, ref.Variant, "compare", seen)
			}
		}
	}
}

// refuseUncounted reports ref's metric where a reads it: after the variant's name in a
// compare, anywhere in an expect.
func (l *loader) refuseUncounted(a Assertion, ref check.Ref, run, key string, seen map[string]bool) {
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
	msg := fmt.Sprintf("%s is not measured in run %s: its client is a program (client.exec) and its server a real one, "+
		"and kalab reads neither's TLS state (the link between them carries only ciphertext), so it would read 0 "+
		"whatever they did; check it with kalab's own server (no server.exec, command or url) or a model client", metric, run)
	l.diags = append(l.diags, Diagnostic{File: l.file, Line: line, Col: col, Path: key, Message: msg})
}
