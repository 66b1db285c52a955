package kernel

import (
	"syscall"
	"time"
	"unsafe"
)

// EnableStamps asks the kernel to report when data arrived
// (SO_TIMESTAMPNS). Stamping chunks with that instead of the moment the
// reader ran keeps goroutine wake-up latency, which reaches milliseconds
// on a loaded machine, out of the modeled delay. Failure only costs that
// precision, so it is ignored. It also turns TCP_INQ on (enableInq).
func EnableStamps(rc syscall.RawConn) {
	if Portable {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		enableInq(fd)
	})
}

// Arrival returns when the data just read reached the socket: the kernel's
// receive timestamp from oob if there is a plausible one, else now. The
// kernel reports wall-clock time, so it is turned into an age and taken off
// now, which keeps the monotonic reading the delay queue relies on.
func Arrival(now time.Time, oob []byte) time.Time {
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

// tcpINQ is Linux's TCP_INQ socket option (include/uapi/linux/tcp.h, since
// 4.18), which the syscall package does not name: with it on, every
// recvmsg brings a control message of the same number (TCP_CM_INQ) holding
// how many bytes the socket still has after the read. The kernel counts a
// queued FIN as one (net/ipv4/tcp.c, tcp_inq_hint), so 0 means nothing at
// all is left.
const tcpINQ = 36

// enableInq asks for TCP_INQ; failure (a kernel before 4.18) only costs
// the read that tells the socket is empty (netsim's recvState.recv).
func enableInq(fd uintptr) {
	_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpINQ, 1)
}

// InqHint returns the bytes left in the socket after the read whose
// control messages oob holds, or -1 when they do not say.
func InqHint(oob []byte) int {
	for len(oob) >= syscall.CmsgLen(0) {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < syscall.SizeofCmsghdr || int(h.Len) > len(oob) {
			return -1
		}
		data := oob[syscall.CmsgLen(0):h.Len]
		if h.Level == syscall.IPPROTO_TCP && h.Type == tcpINQ && len(data) >= 4 {
			return int(*(*int32)(unsafe.Pointer(&data[0])))
		}
		next := syscall.CmsgSpace(int(h.Len) - syscall.CmsgLen(0))
		if next > len(oob) {
			return -1
		}
		oob = oob[next:]
	}
	return -1
}
