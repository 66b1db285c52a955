package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestAnnotationsPointAtTheExpectation(t *testing.T) {
	t.Parallel()
	in := failingInput()
	var buf bytes.Buffer
	if err := Annotations(&buf, in.Runs, in.Scenarios, ""); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"::error file=reuse.yaml,line=9,col=5,title=kalab%3A reuse / close::FAIL connections == 1 (connections=200)",
		"::error file=reuse.yaml,line=1,col=1,title=kalab%3A reuse / close::FAIL total_ms <= 34100 (baseline 31000 +10%25) (baseline=31000, total_ms=90000)",
		"::error file=stale.yaml,title=kalab%3A stale / a::error: listen tcp 127.0.0.1:0: too many open files <&> ]]> \x01",
		"::error file=reuse.yaml,line=12,col=5,title=kalab%3A reuse (compare)::FAIL variant('close').total_ms > 2 * variant('keepalive').total_ms (variant('close').total_ms=40000, variant('keepalive').total_ms=31000)",
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("annotations:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}
}

func TestAnnotationEscaping(t *testing.T) {
	t.Parallel()
	r := baseRun("s", "a,b:c")
	r.File = "/ws/scen arios/s,1.yaml"
	r.Checks = []Check{{Kind: "expect", Expr: "errors == 0\n|| 100% sure", Pass: false, File: r.File, Line: 3, Col: 7}}
	var buf bytes.Buffer
	if err := Annotations(&buf, []*Run{r}, nil, "/ws"); err != nil {
		t.Fatal(err)
	}
	want := "::error file=scen arios/s%2C1.yaml,line=3,col=7,title=kalab%3A s / a%2Cb%3Ac::FAIL errors == 0%0A|| 100%25 sure\n"
	if buf.String() != want {
		t.Fatalf("got  %q\nwant %q", buf.String(), want)
	}
	buf.Reset()
	if err := AnnotateMissing(&buf, []RunDiff{{Scenario: "s", Variant: "v", File: "s.yaml"}}, false, ""); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "::warning file=s.yaml,title=kalab%3A s / v::in the baseline but did not run\n" {
		t.Fatalf("missing: %q", buf.String())
	}
}

func TestDiffTable(t *testing.T) {
	t.Parallel()
	b := loadBase(t, baseRun("s", "a"), baseRun("s", "gone"))
	cur := baseRun("s", "a")
	cur.Metrics.Connections = 50
	cur.Metrics.LatencyMs.Mean = 100
	cur.Metrics.LatencyMs.Max = 4000
	cmp := &Comparer{Baseline: b}
	diffs := cmp.Diff([]*Run{cur, baseRun("s", "fresh")})
	var buf bytes.Buffer
	if err := DiffTable(&buf, diffs, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, re := range []string{
		`s +a +connections +1 +50 +\+4900.0% +\+2, at least \+3 +REGRESSED`,
		`s +a +latency_ms.mean +156 +100 +-35.9% +\+30% +improved`,
		`s +a +latency_ms.p50 +155 +155 +0 +\+20% +same`,
		`s +fresh +- +new`,
		`s +gone +- +missing`,
		`1 compared, 1 regressed, 1 improved, 1 new, 1 missing, 0 not comparable`,
	} {
		if !matches(re, out) {
			t.Errorf("table lacks /%s/:\n%s", re, out)
		}
	}
	if strings.Contains(out, "latency_ms.max") || strings.Contains(out, "rps") {
		t.Errorf("unchanged or informational metrics shown without --all:\n%s", out)
	}
	buf.Reset()
	if err := DiffTable(&buf, diffs, true); err != nil {
		t.Fatal(err)
	}
	if !matches(`s +a +latency_ms.max +400 +4000 +\+900.0% +off +off`, buf.String()) {
		t.Errorf("--all lacks the max:\n%s", buf.String())
	}
}

func matches(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
