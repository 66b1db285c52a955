package netsim

import (
	"syscall"
	"time"
	"unsafe"
)

// enableKernelStamps asks the kernel to report when data arrived
// (SO_TIMESTAMPNS). Stamping chunks with that instead of the moment the
// reader ran keeps goroutine wake-up latency, which reaches milliseconds
// on a loaded machine, out of the modeled delay. Failure only costs that
// precision, so it is ignored.
func enableKernelStamps(rc syscall.RawConn) {
	if portable {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
}

// arrival returns when the data just read reached the socket: the kernel's
// receive timestamp from oob if there is a plausible one, else now. The
// kernel reports wall-clock time, so it is turned into an age and taken off
// now, which keeps the monotonic reading the delay queue relies on.
func arrival(now time.Time, oob []byte) time.Time {
	if len(oob) == 0 {
		return now
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return now
	}
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_TIMESTAMPNS ||
			len(m.Data) < int(unsafe.Sizeof(syscall.Timespec{})) {
			continue
		}
		ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
		age := now.Sub(time.Unix(ts.Unix()))
		if age > 0 && age < time.Second {
			return now.Add(-age)
		}
	}
	return now
}
