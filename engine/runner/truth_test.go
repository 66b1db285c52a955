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

// The libcurl truth file tells the releases apart: scenarios/truth/libcurl.yaml's fin-first
// pairs (the close_notify waiting when the next request leaves) pass as written, real
// libcurl 7.88.1 beside the preset at 7.88.1 (5 hidden re-sends) and 8.14.1 beside 8.14.1
// (none), and both fail once the two model runs swap their client sections, that is their
// releases. Needs both libcurls (the 8.14.1 copy .ci/preamble unpacks).
func TestTruthLibcurlTellsReleasesApart(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "truth", "libcurl.yaml")
	for _, swapped := range []bool{false, true} {
		name := "as written"
		if swapped {
			name = "releases swapped"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := scenario.LoadFiles([]string{file})
			if err != nil {
				t.Fatal(err)
			}
			runs := map[string]*scenario.Run{}
			for _, r := range p.Scenarios[0].Runs {
				runs[r.Variant] = r
			}
			old, new := runs["model-fin-first"], runs["model-fin-first-8"]
			if old == nil || new == nil || old.Settings.Client.ProgramVersion != "7.88.1" || new.Settings.Client.ProgramVersion != "8.14.1" {
				t.Fatalf("the file has no model-fin-first at 7.88.1 and model-fin-first-8 at 8.14.1")
			}
			if swapped {
				old.Settings.Client, new.Settings.Client = new.Settings.Client, old.Settings.Client
			}
			o := opts(t)
			o.Filter = regexp.MustCompile(`/(model|real)-fin-first(-8)?$`)
			out, err := Execute(context.Background(), p, o)
			if err != nil {
				t.Fatal(err)
			}
			skipIfNoisy(t, out)
			for _, rec := range out.Runs {
				if strings.HasPrefix(rec.Variant, "real-") {
					needRuntime(t, rec)
				}
			}
			for _, real := range []string{"real-fin-first", "real-fin-first-8"} {
				var check *report.Check
				for i, c := range out.Scenarios[0].Checks {
					if strings.HasPrefix(c.Expr, "variant('"+real+"').hidden_retries") {
						check = &out.Scenarios[0].Checks[i]
					}
				}
				if check == nil {
					t.Fatalf("no compare check reads %s's hidden re-sends: %+v", real, out.Scenarios[0].Checks)
				}
				if check.Pass == swapped {
					t.Errorf("%s: compare %q passed=%v, observed %v", name, check.Expr, check.Pass, check.Observed)
				}
			}
		})
	}
}
