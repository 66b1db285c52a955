package runner

import (
	"context"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// The truth suite catches a broken preset: scenarios/truth/node-agent.yaml's apache pair
// passes as written (real Node sends Connection: keep-alive, gets Apache's timeout=1 and
// pools nothing: 4 connections, as the preset predicts) and fails once the preset forgets
// that header (the model would keep 1 connection).
func TestTruthSuiteCatchesABrokenPreset(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "truth", "node-agent.yaml")
	for _, broken := range []bool{false, true} {
		name := "intact"
		if broken {
			name = "no keep-alive header"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := scenario.LoadFiles([]string{file})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Scenarios[0].Runs {
				if r.Variant == "model-apache" && broken {
					r.Settings.Client.KeepAliveHeader = false
				}
			}
			o := opts(t)
			o.Filter = regexp.MustCompile(`/(model|real)-apache$`)
			out, err := Execute(context.Background(), p, o)
			if err != nil {
				t.Fatal(err)
			}
			skipIfNoisy(t, out)
			for _, rec := range out.Runs {
				if rec.Variant == "real-apache" {
					needRuntime(t, rec)
				}
			}
			var check *report.Check
			for i, c := range out.Scenarios[0].Checks {
				if strings.Contains(c.Expr, "real-apache") {
					check = &out.Scenarios[0].Checks[i]
				}
			}
			if check == nil {
				t.Fatalf("no compare check reads the apache pair: %+v", out.Scenarios[0].Checks)
			}
			if check.Pass == broken {
				t.Errorf("%s: compare %q passed=%v, observed %v", name, check.Expr, check.Pass, check.Observed)
			}
		})
	}
}
