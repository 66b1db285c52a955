package middlebox

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// tcpSegsIn reads how many TCP segments the kernel received on c, and how many of them
// carried data (tcpi_segs_in, tcpi_data_segs_in of TCP_INFO, Linux 4.2 and 4.6). A TCP
// keepalive probe is a segment without data whose sequence number is one below what the
// box already acknowledged (tcp_write_wakeup / tcp_xmit_probe_skb in net/ipv4/tcp_output.c):
// the receiving kernel answers it with an ACK and drops it in tcp_validate_incoming before
// tcp_ack runs, so tcpi_last_ack_recv and tcpi_last_data_recv do not move, but
// tcp_v4_rcv has counted it in segs_in (tcp_segs_in). Measured on this machine's kernel:
// one probe a second from a Go client with KeepAliveConfig{Idle: 1s, Interval: 1s} raised
// segs_in by one a second while last_ack_recv kept growing.
func tcpSegsIn(c *net.TCPConn) (segs, data uint32, ok bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var info *unix.TCPInfo
	cerr := rc.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), syscall.IPPROTO_TCP, unix.TCP_INFO)
	})
	if cerr != nil || err != nil {
		return 0, 0, false
	}
	return info.Segs_in, info.Data_segs_in, true
}
