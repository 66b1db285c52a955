package judge

import (
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestVirtualRunNotJudgedOnCPU: the record of a run whose neighbours kept its threads from
// a core (1 ms a slice, all of it theirs) and whose p50 fails its bound by 0.5 ms has no
// verdict on the real clock (the busy-neighbours case of
// TestExpectJudgedOverTheNeighboursCPU); the same record on the virtual clock is judged:
// its latency is simulated, and no wait for a core moved it.
func TestVirtualRunNotJudgedOnCPU(t *testing.T) {
	t.Parallel()
	ca, err := check.Compile("latency_ms.p50 <= 23", check.Expect)
	if err != nil {
		t.Fatal(err)
	}
	expect := []scenario.Assertion{{Assertion: ca, File: "s.yaml", Line: 4, Col: 7}}
	real := cpuRun(23.5, 1, 1, 1, 0)
	if ExpectCPUFlip(expect, real) == "" {
		t.Fatal("the real-clock record was judged; the rule this test turns off for virtual runs does not apply to it")
	}
	virtual := cpuRun(23.5, 1, 1, 1, 0)
	virtual.Clock = scenario.ClockVirtual
	if why := ExpectCPUFlip(expect, virtual); why != "" {
		t.Errorf("virtual run left without a verdict: %s", why)
	}
}
