package check

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestVocabularyMatchesDesign(t *testing.T) {
	// docs/reference/metrics.md: the names scenario files and baselines depend on.
	want := []string{"requests", "ok", "errors", "errors_per_1000", "errors_by_class.reset",
		"errors_by_class.eof", "errors_by_class.timeout", "errors_by_class.refused",
		"errors_by_class.tls", "errors_by_class.other", "retries", "hidden_retries", "connections",
		"server_connections", "proxy_connections", "reused_requests", "reuse_ratio",
		"tls_handshakes", "tls_resumed", "latency_ms.min", "latency_ms.p50", "latency_ms.p90",
		"latency_ms.p95", "latency_ms.p99", "latency_ms.max", "latency_ms.mean", "total_ms", "rps",
		"cpu_us_per_request", "peak_rss_mb"}
	for _, n := range want {
		if !IsName(n) {
			t.Errorf("metric %s is missing from the vocabulary", n)
		}
	}
	if IsName("latency_ms") || IsName("bogus") {
		t.Error("IsName accepts a group or an unknown name")
	}
}

func TestFlatRoundTrip(t *testing.T) {
	flat := map[string]float64{}
	for i, n := range Names() {
		flat[n] = float64(i + 1)
	}
	m := FromFlat(flat)
	if m.LatencyMs.P99 != flat["latency_ms.p99"] || m.ErrorsByClass.EOF != flat["errors_by_class.eof"] {
		t.Fatalf("FromFlat = %+v", m)
	}
	if got := m.Flat(); !reflect.DeepEqual(got, flat) {
		t.Fatalf("Flat() = %v; want %v", got, flat)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		src    string
		kind   Kind
		offset int
		msg    string
	}{
		{"erors == 0", Expect, 0, `unknown metric "erors" (did you mean errors?)`},
		{"latency_ms.p51 < 3", Expect, 11, `unknown metric "latency_ms.p51" (did you mean latency_ms.p50?)`},
		{"errors_by_class.rst > 0", Expect, 16, `unknown metric "errors_by_class.rst" (did you mean errors_by_class.reset?)`},
		{"errors +", Expect, 7, "unexpected token EOF"},
		{"errors", Expect, 0, "the expression must be true or false"},
		{"zzz > 1", Expect, 0, "see `kalab help metrics`"},
		{"errors == 0", Compare, 0, `unknown name "errors": a compare expression reads metrics through variant('name')`},
		{"variant('a', 'b').errors > 0", Compare, -1, "variant"},
		// Durations are not numbers: the message gives the figure in milliseconds.
		{"latency_ms.p50 < 100ms", Expect, 17, `"100ms": expressions take plain numbers, not durations; the _ms metrics are milliseconds of scenario time, so write 100`},
		{"total_ms < 1.5s", Expect, 11, "so write 1500"},
		{"latency_ms.p50 < 100 ms", Expect, 17, `"100 ms": expressions take plain numbers`},
		{"variant('a').total_ms < 2m", Compare, 24, "so write 120000"},
		// = is not ==: the message shows the expression with ==.
		{"connections = 1", Expect, 12, "= is not a comparison; use == (connections == 1)"},
		{"errors == 0 && retries=0", Expect, 22, "use == (errors == 0 && retries==0)"},
	} {
		_, err := Compile(tc.src, tc.kind)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%q: err = %v; want *Error", tc.src, err)
			continue
		}
		if !strings.Contains(ce.Message, tc.msg) || (tc.offset >= 0 && ce.Offset != tc.offset) {
			t.Errorf("%q: got offset %d %q; want offset %d containing %q", tc.src, ce.Offset, ce.Message, tc.offset, tc.msg)
		}
	}
}

func TestEval(t *testing.T) {
	a, err := Compile("errors == 0 && latency_ms.p50 < 200 && errors_by_class.reset == 0", Expect)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    Metrics
		want bool
	}{
		{Metrics{LatencyMs: Latency{P50: 150}}, true},
		{Metrics{LatencyMs: Latency{P50: 250}}, false},
		{Metrics{Errors: 1, LatencyMs: Latency{P50: 150}}, false},
	} {
		if got, err := a.Eval(tc.m); err != nil || got != tc.want {
			t.Errorf("Eval(%+v) = %v, %v; want %v", tc.m, got, err, tc.want)
		}
	}
	if _, err := a.EvalCompare(nil); err == nil {
		t.Error("EvalCompare on an expect assertion succeeded")
	}
}

func TestEvalCompare(t *testing.T) {
	a, err := Compile("variant('new').latency_ms.p50 / variant('reused').latency_ms.p50 > 2.5", Compare)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Variants) != 2 || a.Variants[0].Name != "new" || a.Variants[1].Name != "reused" {
		t.Fatalf("variant refs = %+v", a.Variants)
	}
	runs := map[string]Metrics{"new": {LatencyMs: Latency{P50: 450}}, "reused": {LatencyMs: Latency{P50: 150}}}
	lookup := func(n string) (Metrics, bool) { m, ok := runs[n]; return m, ok }
	if ok, err := a.EvalCompare(lookup); err != nil || !ok {
		t.Fatalf("ratio 3 > 2.5: %v %v", ok, err)
	}
	runs["new"] = Metrics{LatencyMs: Latency{P50: 300}}
	if ok, err := a.EvalCompare(lookup); err != nil || ok {
		t.Fatalf("ratio 2 > 2.5: %v %v", ok, err)
	}
	delete(runs, "new")
	if _, err := a.EvalCompare(lookup); err == nil || !strings.Contains(err.Error(), `no variant named "new"`) {
		t.Fatalf("missing variant: err = %v", err)
	}
}

func TestObservedValues(t *testing.T) {
	a, err := Compile("errors == 0 && latency_ms.p50 < 200 && (1 + 1) == 2", Expect)
	if err != nil {
		t.Fatal(err)
	}
	r := a.Check(Metrics{Errors: 2, LatencyMs: Latency{P50: 150}})
	want := map[string]float64{"errors": 2, "latency_ms.p50": 150}
	if r.Pass || r.Err != nil || !reflect.DeepEqual(r.Observed, want) {
		t.Fatalf("result = %+v; want fail with %v", r, want)
	}
	c, err := Compile("variant('a').latency_ms.p99 > variant('b').errors", Compare)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]Metrics{"a": {LatencyMs: Latency{P99: 9}}, "b": {Errors: 3}}
	r = c.CheckCompare(func(n string) (Metrics, bool) { m, ok := runs[n]; return m, ok }, nil)
	want = map[string]float64{"variant('a').latency_ms.p99": 9, "variant('b').errors": 3}
	if !r.Pass || !reflect.DeepEqual(r.Observed, want) {
		t.Fatalf("compare result = %+v; want pass with %v", r, want)
	}
}

// TestPlanReaches: plan_reaches('rules', 'run') names both runs for the loader, makes the
// run's counts what the compare reads (so its timing is judged on them, and they show
// beside the verdict), and is answered by the caller's Reacher.
func TestPlanReaches(t *testing.T) {
	a, err := Compile("plan_reaches('model', 'real') && variant('real').errors < 5", Compare)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, v := range a.Variants {
		names = append(names, v.Name)
	}
	if want := []string{"model", "real", "real"}; !reflect.DeepEqual(names, want) || a.Variants[0].Offset != 13 {
		t.Errorf("Variants = %+v, want %v with model at 13", a.Variants, want)
	}
	if !reflect.DeepEqual(a.Reached, []string{"real"}) {
		t.Errorf("Reached = %v", a.Reached)
	}
	wantRefs := []Ref{{"real", "connections"}, {"real", "errors"}, {"real", "failed_bursts_mask"}}
	if !reflect.DeepEqual(a.Refs(), wantRefs) {
		t.Errorf("Refs = %v, want %v", a.Refs(), wantRefs)
	}
	runs := map[string]Metrics{"model": {}, "real": {Errors: 2, Connections: 13, FailedBurstsMask: 18}}
	lookup := func(n string) (Metrics, bool) { m, ok := runs[n]; return m, ok }
	var asked []string
	for _, reaches := range []bool{true, false} {
		r := a.CheckCompare(lookup, func(rules, run string) (bool, error) {
			asked = append(asked, rules+">"+run)
			return reaches, nil
		})
		want := map[string]float64{"variant('real').connections": 13, "variant('real').errors": 2, "variant('real').failed_bursts_mask": 18}
		if r.Pass != reaches || r.Err != nil || !reflect.DeepEqual(r.Observed, want) {
			t.Errorf("reaches %t: %+v", reaches, r)
		}
	}
	if !reflect.DeepEqual(asked, []string{"model>real", "model>real"}) {
		t.Errorf("the Reacher was asked %v", asked)
	}
	if r := a.CheckCompare(lookup, nil); r.Pass || r.Err == nil || !strings.Contains(r.Err.Error(), "plan_reaches() needs the runs' plans") {
		t.Errorf("without a Reacher: %+v", r)
	}
	for src, want := range map[string]string{
		"plan_reaches('model')":                                  "plan_reaches() takes two variant names",
		"plan_reaches(variant('a').errors > 1 ? 'a' : 'b', 'c')": "plan_reaches() takes variant names written as strings",
		"plan_reaches('a', 'b', 'c')":                            "plan_reaches() takes two variant names",
		"variant('a').errors > 0 && plan_reaches('a', 1)":        "cannot use int as argument (type string)",
	} {
		if _, err := Compile(src, Compare); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want %q", src, err, want)
		}
	}
}
