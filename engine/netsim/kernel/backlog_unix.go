//go:build unix

package kernel

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// ListenBacklog binds a TCP listener whose kernel accept queue holds backlog
// connections (Linux keeps backlog+1: sk_acceptq_is_full is ack_backlog >
// max_ack_backlog). Go's net.Listen always passes net.core.somaxconn, so the socket
// is made here and handed to net.FileListener.
func ListenBacklog(addr *net.TCPAddr, backlog int) (*net.TCPListener, error) {
	family, sa := syscall.AF_INET, syscall.Sockaddr(nil)
	if ip4 := addr.IP.To4(); ip4 != nil {
		s := &syscall.SockaddrInet4{Port: addr.Port}
		copy(s.Addr[:], ip4)
		sa = s
	} else {
		family = syscall.AF_INET6
		s := &syscall.SockaddrInet6{Port: addr.Port}
		copy(s.Addr[:], addr.IP.To16())
		sa = s
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "netsim-listener")
	defer func() { _ = f.Close() }() // the listener holds its own descriptor (FileListener dups it)
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return nil, fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if err := syscall.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	if err := syscall.Listen(fd, backlog); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	return ln.(*net.TCPListener), nil
}
