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
	// Walked in place: syscall.ParseSocketControlMessage allocates a slice per read.
	for len(oob) >= syscall.CmsgLen(0) {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < syscall.SizeofCmsghdr || int(h.Len) > len(oob) {
			return now
		}
		data := oob[syscall.CmsgLen(0):h.Len]
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS &&
			len(data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&data[0]))
			age := now.Sub(time.Unix(ts.Unix()))
			if age > 0 && age < time.Second {
				return now.Add(-age)
			}
		}
		next := syscall.CmsgSpace(int(h.Len) - syscall.CmsgLen(0))
		if next > len(oob) {
			return now
		}
		oob = oob[next:]
	}
	return now
}
