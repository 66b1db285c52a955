//go:build unix

package kernel

import (
	"fmt"
	"syscall"
)

// RaiseFileLimit raises the soft RLIMIT_NOFILE toward need, capped at the
// hard limit. It returns an error naming how many descriptors are needed
// when the hard limit is lower than need; the soft limit is still raised as
// far as it goes. The caller knows what a connection holds (2 with no proxy,
// DescriptorsPerConn with one, more behind a balancer) and says so itself;
// engine/runner's DescriptorError does.
func RaiseFileLimit(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("netsim: reading the open-file limit: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	if need > lim.Max {
		// Root (CAP_SYS_RESOURCE) may raise the hard limit too, up to fs.nr_open; a plain
		// user gets EPERM and the clear error below.
		raised := lim
		raised.Max, raised.Cur = need, need
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			return nil
		}
	}
	target := min(need, lim.Max)
	if target > lim.Cur {
		want := lim
		want.Cur = target
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return fmt.Errorf("netsim: raising the open-file soft limit from %d to %d (need %d): %w",
				lim.Cur, target, need, err)
		}
	}
	if need > lim.Max {
		return fmt.Errorf("netsim: need %d open file descriptors but the hard limit is %d; "+
			"raise it (ulimit -Hn, or LimitNOFILE= for a service) or simulate fewer connections",
			need, lim.Max)
	}
	return nil
}

// FileLimit returns the current soft limit on open file descriptors.
func FileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("netsim: reading the open-file limit: %w", err)
	}
	return lim.Cur, nil
}
