package admit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/judge"
)

// TestWaitHeadroom probes the real clock: a limit no timer can keep (1 ns) finds no
// headroom and gives up at its budget, saying what it measured; one every timer keeps (1 s)
// admits at once; a run with no timer limit needs no probe.
func TestWaitHeadroom(t *testing.T) {
	t.Parallel()
	tight := judge.Tolerance{{Src: judge.SrcLink, Stat: judge.StatMax, D: time.Nanosecond, By: "test"}}
	start := time.Now()
	desc, ok := WaitHeadroom(context.Background(), tight, 300*time.Millisecond)
	if took := time.Since(start); ok || took < 300*time.Millisecond {
		t.Errorf("a 1 ns limit: headroom %v after %v (%s), want none after the 300 ms budget", ok, took, desc)
	}
	if !strings.Contains(desc, "against the link max limit of 0.00 ms") || !strings.Contains(desc, "of 50)") {
		t.Errorf("the probe does not say what it measured against what: %s", desc)
	}
	loose := judge.Tolerance{{Src: judge.SrcLink, Stat: judge.StatMax, D: time.Second, By: "test"}, {Src: judge.SrcSchedule, Stat: judge.StatP99, D: 2 * time.Second, By: "test"}}
	if desc, ok := WaitHeadroom(context.Background(), loose, time.Minute); !ok || !strings.Contains(desc, "link max limit of 1000.00 ms") {
		t.Errorf("a 1 s limit: headroom %v (%s), want it at once, judged on the tightest limit", ok, desc)
	}
	if _, ok := WaitHeadroom(context.Background(), nil, time.Nanosecond); !ok {
		t.Error("a run with no timer limit was refused")
	}
}
