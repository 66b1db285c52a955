package h3

import (
	"context"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// How a connection ended, as ConnRecord.Closed says it.
const (
	CloseIdleTimeout      = "idle_timeout"      // this end's idle timer fired after the handshake
	CloseHandshakeTimeout = "handshake_timeout" // the handshake never completed (no answer, or too slow)
	CloseByClient         = "client_close"      // the client sent CONNECTION_CLOSE (or was told to)
	CloseByServer         = "server_close"      // the server sent CONNECTION_CLOSE
	CloseStatelessReset   = "stateless_reset"   // the peer had no state for the connection
	CloseTransportError   = "transport_error"   // a QUIC protocol error
)

// connTrace counts what one QUIC connection did from quic-go's own qlog events: quic-go
// hands every connection's events to the Trace its Config.Tracer returned, so counting
// them needs no wrapped socket and no parsed packets. Nothing is encoded: RecordEvent
// looks at the event's Go type and keeps a few numbers.
type connTrace struct {
	client bool

	mu           sync.Mutex
	id           uint64     // the server's id (ConnRecord.ID), set when the connection is accepted
	conn         *quic.Conn // the accepted connection (server), whose TLS state says whether it resumed
	opened       time.Time
	closedAt     time.Time
	heard        time.Time // when the last packet arrived
	closed       string    // "" while open
	handshake    bool      // the handshake completed
	zeroRTT      bool      // the server received and decrypted a 0-RTT packet
	pings        int64
	migrations   int64
	requests     int64 // requests served on it (server)
	zeroRTTReqs  int64 // of those, the ones that arrived before the handshake completed
	idleTimedOut bool  // closed by this end's idle timer after the handshake
}

func newConnTrace(client bool) *connTrace {
	return &connTrace{client: client, opened: time.Now()}
}

// AddProducer hands every producer (quic-go's connection, the HTTP/3 layer and its
// streams) the same recorder: it keeps counts, not a stream of records, so there is
// nothing to flush per producer.
func (t *connTrace) AddProducer() qlogwriter.Recorder { return t }

// Close ends a producer; the counts stay readable.
func (t *connTrace) Close() error { return nil }

// RecordEvent counts the events kalab reports and ignores the rest.
func (t *connTrace) RecordEvent(ev qlogwriter.Event) {
	switch e := ev.(type) {
	case qlog.PacketSent:
		// An MTU probe carries a PING too; it is not a keep-alive. A loss probe (PTO)
		// with nothing to retransmit is a PING as well and counts: a lossless link whose
		// RTT quic-go has measured sends none.
		if !e.IsMTUProbePacket && hasPing(e.Frames) {
			t.mu.Lock()
			t.pings++
			t.mu.Unlock()
		}
	case qlog.PacketReceived:
		// On the server, a received 0-RTT packet is one it decrypted: it accepted 0-RTT
		// (rejected ones are dropped undecrypted, as PacketDropped).
		now := time.Now()
		t.mu.Lock()
		t.heard = now
		if !t.client && e.Header.PacketType == qlog.PacketType0RTT {
			t.zeroRTT = true
		}
		t.mu.Unlock()
	case qlog.ConnectionStateUpdated:
		if e.State == qlog.ConnectionStateHandshakeComplete {
			t.mu.Lock()
			t.handshake = true
			t.mu.Unlock()
		}
	case qlog.TupleAssigned:
		// The TupleID "" names the active path: assigning it a new tuple is a switch to a
		// new address pair (the server after validating a client's new address, or a
		// client that migrated). A tuple with an id is a path being probed.
		if e.TupleID == "" {
			t.mu.Lock()
			t.migrations++
			t.mu.Unlock()
		}
	case qlog.ConnectionClosed:
		t.close(e)
	}
}

// close records how the connection ended. quic-go gives the idle timeout and the
// handshake timeout the same trigger; whether the handshake had completed tells them apart.
func (t *connTrace) close(e qlog.ConnectionClosed) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closedAt = time.Now()
	local := e.Initiator != qlog.InitiatorRemote
	switch {
	case e.Trigger == qlog.ConnectionCloseTriggerIdleTimeout && t.handshake:
		t.closed, t.idleTimedOut = CloseIdleTimeout, true
	case e.Trigger == qlog.ConnectionCloseTriggerIdleTimeout:
		t.closed = CloseHandshakeTimeout
	case e.Trigger == qlog.ConnectionCloseTriggerStatelessReset:
		t.closed = CloseStatelessReset
	case e.ConnectionError != nil && *e.ConnectionError != quic.NoError:
		t.closed = CloseTransportError
	case local == t.client:
		t.closed = CloseByClient
	default:
		t.closed = CloseByServer
	}
}

func hasPing(frames []qlog.Frame) bool {
	for _, f := range frames {
		if _, ok := f.Frame.(*qlog.PingFrame); ok {
			return true
		}
	}
	return false
}

// traceSums adds up the counters of many connections.
type traceSums struct {
	handshakes, zeroRTT, idle, pings, migrations, requests, zeroRTTReqs int64
}

func (s *traceSums) add(t *connTrace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.handshakes += b2i(t.handshake)
	s.zeroRTT += b2i(t.zeroRTT)
	s.idle += b2i(t.idleTimedOut)
	s.pings += t.pings
	s.migrations += t.migrations
	s.requests += t.requests
	s.zeroRTTReqs += t.zeroRTTReqs
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// traceKey carries a dial's connTrace to the Tracer, which quic-go calls with the dial's
// context.
type traceKey struct{}

// tracerFrom is a client's quic.Config.Tracer: it returns the trace the dial put in ctx.
func tracerFrom(ctx context.Context, _ bool, _ quic.ConnectionID) qlogwriter.Trace {
	if t, ok := ctx.Value(traceKey{}).(*connTrace); ok {
		return t
	}
	return nil // an untyped nil: quic-go then records nothing
}
