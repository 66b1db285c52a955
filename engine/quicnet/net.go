package quicnet

import (
	"fmt"
	"net"

	"github.com/kalab-dev/kalab/engine/loopback"
)

// Net opens packet sockets: Real's on loopback UDP, or a Memory network's.
type Net interface {
	// ListenPacket binds addr, a loopback host:port; port 0 picks a free one.
	ListenPacket(addr string) (net.PacketConn, error)
}

// Real returns the Net of the real clock: UDP sockets on loopback.
func Real() Net { return realNet{} }

type realNet struct{}

func (realNet) ListenPacket(addr string) (net.PacketConn, error) {
	a, err := loopback.Check(addr, false)
	if err != nil {
		return nil, fmt.Errorf("quicnet: %w", err)
	}
	pc, err := net.ListenPacket("udp", a)
	if err != nil {
		return nil, fmt.Errorf("quicnet: %w", err)
	}
	return pc, nil
}
