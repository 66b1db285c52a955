package chromeh3

import (
	"net"
	"sync"
	"testing"
	"time"
)

// natRelay forwards UDP between Chromium and the server the way a NAT does, with one
// twist that makes it rebind: when a client has been quiet for longer than idle, its next
// datagram leaves from a fresh upstream socket, that is from a new source port, as when a
// NAT's mapping expired and a new one was made. The old mapping is gone: what the server
// sends to it is lost.
type natRelay struct {
	Addr   string // where Chromium sends: 127.0.0.1:PORT
	down   *net.UDPConn
	server *net.UDPAddr
	idle   time.Duration

	mu       sync.Mutex
	mappings map[string]*mapping // by client address
	rebinds  int
}

type mapping struct {
	up   *net.UDPConn
	last time.Time
}

func startRelay(t *testing.T, serverAddr string, idle time.Duration) *natRelay {
	t.Helper()
	srv, err := net.ResolveUDPAddr("udp", serverAddr)
	if err != nil {
		t.Fatal(err)
	}
	down, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &natRelay{Addr: down.LocalAddr().String(), down: down, server: srv, idle: idle, mappings: map[string]*mapping{}}
	go r.fromClients()
	t.Cleanup(func() {
		down.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, m := range r.mappings {
			m.up.Close()
		}
	})
	return r
}

// fromClients forwards each client datagram upstream, through the client's mapping.
func (r *natRelay) fromClients() {
	buf := make([]byte, 65536)
	for {
		n, client, err := r.down.ReadFromUDP(buf)
		if err != nil {
			return
		}
		up := r.mappingFor(client)
		if up == nil {
			continue
		}
		_, _ = up.WriteToUDP(buf[:n], r.server)
	}
}

// mappingFor returns the upstream socket of client, a new one when the old has idled out.
func (r *natRelay) mappingFor(client *net.UDPAddr) *net.UDPConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	m := r.mappings[client.String()]
	if m != nil && now.Sub(m.last) <= r.idle {
		m.last = now
		return m.up
	}
	if m != nil {
		m.up.Close()
		r.rebinds++
	}
	up, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil
	}
	r.mappings[client.String()] = &mapping{up: up, last: now}
	go r.toClient(up, client)
	return up
}

// toClient forwards what the server sends to a mapping back to its client.
func (r *natRelay) toClient(up *net.UDPConn, client *net.UDPAddr) {
	buf := make([]byte, 65536)
	for {
		n, _, err := up.ReadFromUDP(buf)
		if err != nil {
			return
		}
		_, _ = r.down.WriteToUDP(buf[:n], client)
	}
}

func (r *natRelay) rebound() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rebinds
}
