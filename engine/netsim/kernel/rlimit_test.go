//go:build unix

package kernel

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestRaiseFileLimit(t *testing.T) {
	t.Parallel()
	if err := RaiseFileLimit(64); err != nil {
		t.Errorf("RaiseFileLimit(64): %v", err)
	}
	const huge = 1 << 40
	err := RaiseFileLimit(huge)
	if err == nil {
		t.Skip("hard limit is unlimited here") // skip: a machine setting, not load: not in .ci/allowed-skips, so CI fails on it
	}
	if !strings.Contains(err.Error(), fmt.Sprint(uint64(huge))) {
		t.Errorf("error %q does not say how many descriptors are needed", err)
	}
}

// Root may raise the hard limit: a 5,000-connection burst needs 20,256 descriptors where
// the hard limit is often 20,000. Not parallel: it changes the process's limit.
func TestRaiseFileLimitPastHardAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_RESOURCE)") // skip: a machine setting, not load: not in .ci/allowed-skips, so CI fails on it
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	need := lim.Max + 1000
	if nrOpen, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		var n uint64
		if _, err := fmt.Sscan(string(nrOpen), &n); err != nil {
			t.Fatal(err)
		}
		if need > n {
			t.Skipf("fs.nr_open %d is below %d", n, need) // skip: a machine setting, not load: not in .ci/allowed-skips, so CI fails on it
		}
	}
	probe := lim
	probe.Max = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &probe); err != nil {
		t.Skipf("this root may not raise the hard limit (no CAP_SYS_RESOURCE): %v", err) // skip: a container without CAP_SYS_RESOURCE: listed in .ci/allowed-skips
	}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) // back, so RaiseFileLimit does the raising
	if err := RaiseFileLimit(need); err != nil {
		t.Fatalf("RaiseFileLimit(%d) as root: %v", need, err)
	}
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	if lim.Cur < need {
		t.Fatalf("soft limit %d after asking for %d", lim.Cur, need)
	}
}
