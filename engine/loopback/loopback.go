// Package loopback is kalab's one check that an address stays on the machine: every
// address kalab binds, connects to or hands a program to connect to passes Check, and
// --allow-remote (for a server.url the user runs elsewhere) is the only way past it.
//
// The engine and the command line both use it; it is kalab's own, not a stable API for
// other modules.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrNotLoopback is wrapped by every refusal of Check.
var ErrNotLoopback = errors.New("not a loopback address (kalab uses 127.0.0.0/8 or ::1 only; --allow-remote lets a server.url name another host)")

// Check accepts host:port whose host is a loopback IP literal or localhost, and returns
// it with the host as an IP (localhost becomes 127.0.0.1), so that no resolver decides
// where it goes. With allowRemote any host:port is returned unchanged.
func Check(hostport string, allowRemote bool) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", fmt.Errorf("%q: %w", hostport, err)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err == nil && ip.Unmap().IsLoopback() && ip.Zone() == "" {
		return net.JoinHostPort(ip.Unmap().String(), port), nil
	}
	if allowRemote {
		return hostport, nil
	}
	return "", fmt.Errorf("%q: %w", hostport, ErrNotLoopback)
}

// IsLoopback reports whether host (no port) is a loopback IP literal or localhost.
func IsLoopback(host string) bool {
	_, err := Check(net.JoinHostPort(host, "0"), false)
	return err == nil
}
