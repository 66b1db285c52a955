package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/internal/tolerance"
)

func TestParseTolerance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want tolerance.Tolerance
		bad  bool
	}{
		{in: "5%", want: tolerance.Tolerance{Relative: true, Value: 0.05}},
		{in: "0.5%", want: tolerance.Tolerance{Relative: true, Value: 0.005}},
		{in: "3", want: tolerance.Tolerance{Value: 3}},
		{in: "0", want: tolerance.Tolerance{}},
		{in: "1e1", want: tolerance.Tolerance{Value: 10}},
		{in: "off", want: tolerance.Tolerance{Off: true}},
		{in: "1000%", want: tolerance.Tolerance{Relative: true, Value: 10}},
		{in: "1001%", bad: true},
		{in: "-1", bad: true},
		{in: "-5%", bad: true},
		{in: "NaN", bad: true},
		{in: "inf", bad: true},
		{in: "0x10", bad: true},
		{in: "five", bad: true},
		{in: "", bad: true},
		{in: "%", bad: true},
	} {
		got, err := tolerance.Parse(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseTolerance(%q) = %+v; want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.Off != tc.want.Off || got.Relative != tc.want.Relative || math.Abs(got.Value-tc.want.Value) > 1e-12 {
			t.Errorf("ParseTolerance(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if err == nil {
			back, err := tolerance.Parse(got.String())
			if err != nil || back != got {
				t.Errorf("%q renders as %q, which reads back as %+v, %v", tc.in, got.String(), back, err)
			}
		}
	}
}

func TestParseToleranceFlag(t *testing.T) {
	t.Parallel()
	got, err := ParseToleranceFlag("latency_ms.p50=5%")
	if err != nil || len(got) != 1 || !got["latency_ms.p50"].Relative || got["latency_ms.p50"].Value != 0.05 {
		t.Fatalf("got %+v %v", got, err)
	}
	group, err := ParseToleranceFlag("latency_ms.*=off")
	if err != nil || len(group) != 7 || !group["latency_ms.p99"].Off || !group["latency_ms.min"].Off {
		t.Fatalf("group: %+v %v", group, err)
	}
	for _, bad := range []string{"latency_ms.p50", "=5%", "latency_ms.p5=5%", "errors=lots", "nope.*=1", "errors.*=1"} {
		if _, err := ParseToleranceFlag(bad); err == nil {
			t.Errorf("ParseToleranceFlag(%q) accepted", bad)
		}
	}
	if _, err := ParseToleranceFlag("latency_ms.p5=5%"); err == nil || !strings.Contains(err.Error(), `unknown metric "latency_ms.p5"`) {
		t.Errorf("unknown metric error = %v", err)
	}
}

func TestEveryMetricHasARule(t *testing.T) {
	t.Parallel()
	for _, n := range check.Names() {
		if _, ok := DefaultRule(n); !ok {
			t.Errorf("metric %s has no default rule", n)
		}
	}
	if _, ok := DefaultRule("no_such_metric"); ok {
		t.Error("DefaultRule accepted an unknown metric")
	}
}

// FuzzParseTolerance: no input panics, and what parses renders back to the same value.
func FuzzParseTolerance(f *testing.F) {
	for _, s := range []string{"5%", "0", "off", "1e3", "1000%", "-1", "NaN", "0x1p3", "%", " 7 % "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tol, err := tolerance.Parse(s)
		if err != nil {
			return
		}
		if tol.Value < 0 || tol.Value != tol.Value || math.IsInf(tol.Value, 0) {
			t.Fatalf("%q parsed to %+v", s, tol)
		}
		back, err := tolerance.Parse(tol.String())
		if err != nil || back != tol {
			t.Fatalf("%q -> %q -> %+v, %v", s, tol.String(), back, err)
		}
	})
}
