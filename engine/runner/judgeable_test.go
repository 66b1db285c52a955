package runner

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// bandwidthMax is the case: a compare on latency_ms.max at 20 ms RTT over TLS,
// whose tolerance (RTT/10 over 5 trips, 0.4 ms) is below the link's quiet max lateness.
const bandwidthMax = `name: bandwidth-max
description: Large responses at 20 ms RTT.
network: {rtt: 20ms}
server: {tls: true, response: {body_bytes: 100000}}
load: {requests: 4}
variants:
  - {name: a}
  - {name: b, client: {keepalive: false}}
compare:
  - "variant('b').latency_ms.max > variant('a').latency_ms.max"
  - "variant('b').latency_ms.p50 > variant('a').latency_ms.p50"
expect:
  - "latency_ms.max < 1000"
`

// TestUnjudgeable: the compare check on the max is reported, with its position, the
// reason and the fixes; the p50 compare and the expect check (judged on its own margin,
// up to one RTT per trip) are not; a larger time scale, or judging nothing, reports none.
func TestUnjudgeable(t *testing.T) {
	p := plan(t, bandwidthMax)
	ds := Unjudgeable(p, 0, 0)
	if len(ds) != 1 {
		t.Fatalf("got %d diagnostics, want 1 (the compare on the max):\n%v", len(ds), ds)
	}
	d := ds[0]
	if d.Line != 10 || d.Col != 5 {
		t.Errorf("at %d:%d, want the compare check at 10:5", d.Line, d.Col)
	}
	for _, want := range []string{"latency_ms.max", "cannot be judged at time_scale 1", "max lateness reach 0.40 ms", "RTT/10 over 5 trips",
		"5.00 ms", "time_scale 13 or more", "latency_ms.p50"} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("the message lacks %q:\n%s", want, d.Message)
		}
	}
	if ds := Unjudgeable(p, 13, 0); len(ds) != 0 {
		t.Errorf("at the time scale it suggests, still reported:\n%v", ds)
	}
	if ds := Unjudgeable(p, 0, -1); len(ds) != 0 {
		t.Errorf("with nothing judged (--lag-tolerance 0), still reported:\n%v", ds)
	}
}

// TestBundledSuiteJudgeable: no check of the bundled suite is below what its timers reach
// on a quiet machine.
func TestBundledSuiteJudgeable(t *testing.T) {
	files, err := scenario.FindFiles([]string{"../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Unjudgeable(p, 0, 0) {
		t.Error(d.String())
	}
}

func TestRoundUp(t *testing.T) {
	for v, want := range map[float64]string{12.5: "13", 0.351: "0.36", 0.35: "0.35", 130: "130", 1: "1", 0.2: "0.2", 99.01: "100"} {
		if got := roundUp(v); got != want {
			t.Errorf("roundUp(%g) = %s, want %s", v, got, want)
		}
	}
}
