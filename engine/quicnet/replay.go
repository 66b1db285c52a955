package quicnet

import (
	"encoding/binary"
	"net"
	"time"
)

// The replay model is an on-path attacker against 0-RTT (RFC 9001 section 9.2): it
// copies a client's first flight when that flight carries 0-RTT data and sends the copy
// to the server again from an address of its own, ReplayFirstFlight after the first
// 0-RTT datagram, throwing away what the server answers. The first flight is every
// datagram of the flow up to and including the last one that holds a 0-RTT packet. The
// copy travels the link's delay and bandwidth as the client's datagrams do, but not its
// loss: the experiment asks what a server does with a replay, not whether one arrives.

// maxFlight bounds the datagrams kept of one first flight: a client's first flight is a
// handful of datagrams, and a flow that keeps sending long headers without 0-RTT must
// not grow the copy forever.
const maxFlight = 64

// flight is what the attacker kept of one flow's first flight. Under Relay.mu.
type flight struct {
	open   bool // still copying
	armed  bool // a replay is scheduled
	dgrams [][]byte
	n0rtt  int // datagrams up to and including the last one with a 0-RTT packet
}

// record copies a client datagram into its flow's first flight.
func (r *Relay) record(f *flow, b []byte, now time.Time) {
	if f.flight == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fl := f.flight
	if !fl.open || r.closed {
		return
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		// A short header: the client has 1-RTT keys, so it sends no more 0-RTT.
		fl.stop()
		return
	}
	fl.dgrams = append(fl.dgrams, b)
	if hasZeroRTT(b) {
		fl.n0rtt = len(fl.dgrams)
		if !fl.armed {
			fl.armed = true
			r.wg.Add(1)
			go r.replay(f, now.Add(r.cfg.ReplayFirstFlight))
		}
	}
	if len(fl.dgrams) >= maxFlight {
		fl.stop()
	}
}

// stop ends the copying, keeping the copy only when a replay will send it.
func (fl *flight) stop() {
	fl.open = false
	if !fl.armed {
		fl.dgrams = nil
	}
}

// replay waits until at and sends the flow's first flight again from a fresh socket.
func (r *Relay) replay(f *flow, at time.Time) {
	defer r.wg.Done()
	if !r.cfg.Sleep(at, r.ctx.Done()) {
		return
	}
	r.mu.Lock()
	fl := f.flight
	copies := fl.dgrams[:fl.n0rtt]
	fl.open, fl.dgrams = false, nil
	if r.closed {
		r.mu.Unlock()
		return
	}
	sock, err := r.n.ListenPacket(r.local)
	if err != nil {
		r.mu.Unlock()
		return
	}
	r.socks = append(r.socks, sock)
	l := r.newLane(r.paceUp, func(b []byte) { _, _ = sock.WriteTo(b, r.upstream) })
	r.wg.Add(1)
	go r.readAnswers(sock)
	r.mu.Unlock()
	r.replays.Add(1)
	now := time.Now()
	for _, b := range copies {
		l.push(b, now)
	}
}

// readAnswers counts and discards what the server sends to a replay's socket.
func (r *Relay) readAnswers(sock net.PacketConn) {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		if _, _, err := sock.ReadFrom(buf); err != nil {
			return
		}
		r.replayAnswers.Add(1)
	}
}

// The long-header packet types, by version (RFC 9000 section 17.2, RFC 9369 section 3.2).
type packetType uint8

const (
	initial packetType = iota
	zeroRTT
	handshake
	retry
)

const (
	quicV1 = 0x00000001
	quicV2 = 0x6b3343cf
)

// hasZeroRTT reports whether a datagram holds a 0-RTT packet, walking the long-header
// packets coalesced in it (RFC 9000 section 12.2) up to a short header or the end.
func hasZeroRTT(b []byte) bool {
	for len(b) > 0 && b[0]&0x80 != 0 {
		typ, ok := longType(b)
		if !ok {
			return false
		}
		if typ == zeroRTT {
			return true
		}
		if b, ok = afterPacket(b, typ); !ok {
			return false
		}
	}
	return false
}

// longType reads a long header's packet type; false for a version it does not know,
// version negotiation included.
func longType(b []byte) (packetType, bool) {
	if len(b) < 5 {
		return 0, false
	}
	bits := b[0] >> 4 & 3
	switch binary.BigEndian.Uint32(b[1:5]) {
	case quicV1:
		return packetType(bits), true
	case quicV2:
		return [4]packetType{retry, initial, zeroRTT, handshake}[bits], true
	}
	return 0, false
}

// afterPacket returns what follows the long-header packet at the start of b.
func afterPacket(b []byte, typ packetType) ([]byte, bool) {
	if typ == retry {
		return nil, true // a Retry has no length and ends its datagram
	}
	i := 5
	for range 2 { // the destination and source connection IDs
		if i >= len(b) {
			return nil, false
		}
		i += 1 + int(b[i])
	}
	if typ == initial {
		token, n := varint(b, i)
		if n == 0 || token > uint64(len(b)) {
			return nil, false
		}
		i += n + int(token)
	}
	length, n := varint(b, i)
	if n == 0 || length > uint64(len(b)) || i+n+int(length) > len(b) {
		return nil, false
	}
	return b[i+n+int(length):], true
}

// varint reads a QUIC variable-length integer at b[i:] (RFC 9000 section 16); n is 0
// when b ends first.
func varint(b []byte, i int) (v uint64, n int) {
	if i >= len(b) {
		return 0, 0
	}
	n = 1 << (b[i] >> 6)
	if i+n > len(b) {
		return 0, 0
	}
	v = uint64(b[i] & 0x3f)
	for _, c := range b[i+1 : i+n] {
		v = v<<8 | uint64(c)
	}
	return v, n
}
