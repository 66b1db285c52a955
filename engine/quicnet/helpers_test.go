package quicnet

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"
)

const serverAddr = "127.0.0.1:9000"

// rig is a server socket and a client socket on a Memory network with a relay between
// them. Everything is closed when the test ends, so a goroutine left behind fails the
// bubble.
type rig struct {
	t        *testing.T
	m        *Memory
	srv, cli net.PacketConn
	r        *Relay
	start    time.Time
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	g := &rig{t: t, m: NewMemory(), start: time.Now()}
	g.srv = must(g.m.ListenPacket(serverAddr))
	g.cli = must(g.m.ListenPacket("127.0.0.1:0"))
	cfg.Upstream = serverAddr
	r, err := Start(t.Context(), g.m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.r = r
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		g.m.Close()
	})
	return g
}

// send writes one datagram from the client through the relay.
func (g *rig) send(s string) { g.sendFrom(g.cli, []byte(s)) }

func (g *rig) sendFrom(pc net.PacketConn, b []byte) {
	g.t.Helper()
	if _, err := pc.WriteTo(b, g.r.Addr()); err != nil {
		g.t.Fatal(err)
	}
}

// since is how long after the rig started now is.
func (g *rig) since() time.Duration { return time.Since(g.start) }

// arrival is one datagram a sink read: when (since the rig started), what, from whom.
type arrival struct {
	at   time.Duration
	data string
	from string
}

// sink reads a socket until it closes, and answers each datagram with answer's reply
// when answer is set.
type sink struct {
	mu  sync.Mutex
	got []arrival
}

func (g *rig) sink(pc net.PacketConn, answer func(string) string) *sink {
	s := &sink{}
	go func() {
		buf := make([]byte, maxDatagram)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			a := arrival{at: g.since(), data: string(buf[:n]), from: from.String()}
			s.mu.Lock()
			s.got = append(s.got, a)
			s.mu.Unlock()
			if answer != nil {
				if reply := answer(a.data); reply != "" {
					_, _ = pc.WriteTo([]byte(reply), from)
				}
			}
		}
	}()
	return s
}

func (s *sink) all() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.got...)
}

func echo(s string) string { return "re:" + s }

// longPacket builds a QUIC long-header packet of the given type bits and version, with
// an 8-byte destination connection ID, no source connection ID, no token and payload
// bytes of payload: enough for the parser to walk coalesced packets.
func longPacket(typeBits byte, version uint32, payload int) []byte {
	b := []byte{0xc0 | typeBits<<4}
	b = binary.BigEndian.AppendUint32(b, version)
	b = append(b, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0)
	if (version == quicV1 && typeBits == 0) || (version == quicV2 && typeBits == 1) {
		b = append(b, 0) // an Initial's empty token
	}
	b = append(b, 0x40|byte(payload>>8), byte(payload))
	return append(b, make([]byte, payload)...)
}

func shortPacket(payload int) []byte { return append([]byte{0x40}, make([]byte, payload)...) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func udpAddr(s string) *net.UDPAddr { return must(net.ResolveUDPAddr("udp", s)) }
