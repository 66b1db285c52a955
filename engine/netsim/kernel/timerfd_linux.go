package kernel

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// ArmTimerFD sets the timerfd numbered fd to expire at `at`, or disarms it
// when at is zero.
func ArmTimerFD(fd uintptr, at time.Time) {
	var its struct{ interval, value syscall.Timespec }
	if !at.IsZero() {
		// A zero value would disarm, so a past instant becomes 1 ns.
		its.value = syscall.NsecToTimespec(max(int64(time.Until(at)), 1))
	}
	// The timerfd is never closed, so its number stays valid, and
	// timerfd_settime does not block.
	_, _, _ = syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0,
		uintptr(unsafe.Pointer(&its)), 0, 0, 0)
}

// NewTimerFD opens a non-blocking CLOCK_MONOTONIC timerfd, wrapped so that
// reads park on the netpoller, and returns it with its number; or nil if
// the kernel refuses one, or when Portable asks for none. Its user keeps it
// open: the process-wide clock's lives as long as the process.
func NewTimerFD() (*os.File, uintptr) {
	const (
		clockMonotonic = 1
		tfdNonblock    = syscall.O_NONBLOCK
		tfdCloexec     = syscall.O_CLOEXEC
	)
	if Portable {
		return nil, 0
	}
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil, 0
	}
	return os.NewFile(fd, "netsim-clock-timerfd"), fd
}
