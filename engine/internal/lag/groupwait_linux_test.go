package lag

import (
	"context"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestParseGroupStat(t *testing.T) {
	// A command name with a space and a parenthesis, as /proc writes it.
	line := "4242 (node (x) y) S 1 4240 4240 0 -1 4194560 1200 0 3 0 157 43 0 0 20 0 11 0 9876 0 0\n"
	grp, ticks, ok := parseGroupStat([]byte(line))
	if !ok || grp != 4240 || ticks != 200 {
		t.Fatalf("parseGroupStat = %d, %d, %v; want 4240, 200 (157 + 43), true", grp, ticks, ok)
	}
	if _, _, ok := parseGroupStat([]byte("4242 (node) S 1 4240\n")); ok {
		t.Error("a short line was read")
	}
}

// TestSplitGroup: by hand, the group's threads waited 100 ms while the machine was busy for
// 1,000 ms, 300 of them kalab's and 200 the group's: the other 500 ms (half) were other
// processes', so half the wait is theirs; 100 ms of steal adds the group's share of it,
// 200 / 1,000 of 100 ms. A thread born in the span counts from zero.
func TestSplitGroup(t *testing.T) {
	ms := time.Millisecond
	from := groupSample{waits: threadWaits{1: 40 * ms}}
	to := groupSample{waits: threadWaits{1: 100 * ms, 2: 40 * ms}, cpu: 200 * ms, sys: sysCPU{busy: 1000 * ms, self: 300 * ms}}
	own, nb, ok := splitGroup(from, to)
	if !ok || own != 50*ms || nb != 50*ms {
		t.Fatalf("split = own %v, neighbours %v, %v; want 50ms, 50ms", own, nb, ok)
	}
	to.sys.steal = 100 * ms
	if _, nb, _ = splitGroup(from, to); nb != 70*ms {
		t.Errorf("with 100 ms of steal the neighbours' part is %v; want 70ms", nb)
	}
}

// TestGroupWaitSeesAProgramsWait runs a process group of more busy shells than the machine
// has cores: together its threads must wait about (shells - cores) x the span for a core.
// A group that sleeps waits far less, and a group that does not exist reports nothing.
func TestGroupWaitSeesAProgramsWait(t *testing.T) {
	if _, _, ok := StartCPUWait().Split(); !ok {
		t.Skip("this system has no per-thread run-queue delay (schedstat)") // skip: a kernel without schedstat: not in .ci/allowed-skips, so CI fails on it
	}
	const span = 400 * time.Millisecond
	shells := 2 * runtime.NumCPU()
	loop := "while :; do :; done"
	group := func(script string) (int, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c := exec.CommandContext(ctx, "sh", "-c", script)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		pgid := c.Process.Pid
		return pgid, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL); cancel(); _ = c.Wait() }
	}
	script := ""
	for range shells {
		script += "(" + loop + ") & "
	}
	pgid, stop := group(script + "wait")
	time.Sleep(50 * time.Millisecond) // the shells start
	w := StartGroupWait(pgid)
	time.Sleep(span)
	own, nb, ok := w.Split()
	stop()
	want := time.Duration(shells-runtime.NumCPU()) * span
	if !ok || own+nb < want/2 {
		t.Errorf("%d busy shells on %d cores for %v waited %v (%v own, %v neighbours), %v; want at least %v", shells, runtime.NumCPU(), span, own+nb, own, nb, ok, want/2)
	}
	pgid, stop = group("sleep 5")
	w = StartGroupWait(pgid)
	time.Sleep(span)
	idle, inb, _ := w.Split()
	stop()
	if idle+inb >= (own+nb)/4 {
		t.Errorf("a sleeping group waited %v, a busy one %v: the measure does not tell them apart", idle+inb, own+nb)
	}
	if _, _, ok := StartGroupWait(1 << 30).Split(); ok {
		t.Error("a process group that does not exist reported a wait")
	}
	t.Logf("busy group: %v own, %v neighbours; sleeping group: %v", own, nb, idle+inb)
}
