// Package conntrack keeps the connection truth of a simulated link: for each link, who
// closed first, how (idle, straight after a response, reset, refused, the run's end),
// after how long the upstream side had been silent, what each way carried, and whether
// the client sent a request the server could no longer receive (Record). Both of
// netsim's links feed a Tracker as they carry chunks and see closes.
package conntrack

import (
	"sync"
	"sync/atomic"
	"time"
)

// Side is an end of a link, or kalab itself when the proxy tore the link down.
type Side string

// Sides of a link.
const (
	SideServer Side = "server" // the upstream
	SideClient Side = "client"
	SideKalab  Side = "kalab" // the proxy closed the link (the run ended)
)

// Reason says how a link's first close happened.
type Reason string

// Reasons of a first close.
const (
	// ReasonIdle: a FIN after at least AfterResponseWindow of silence on the upstream side.
	ReasonIdle Reason = "idle"
	// ReasonAfterResponse: a FIN within AfterResponseWindow of the upstream side's last
	// byte, as a server sends straight after a "Connection: close" response.
	ReasonAfterResponse Reason = "after-response"
	// ReasonReset: a reset instead of a FIN.
	ReasonReset Reason = "reset"
	// ReasonRefused: the upstream refused the connection.
	ReasonRefused Reason = "refused"
	// ReasonRunEnd: neither end closed before the proxy did.
	ReasonRunEnd Reason = "run-end"
)

// AfterResponseWindow separates a close straight after a response from an idle close: on
// loopback a server that closes after its last response sends the FIN within
// microseconds of the response's last byte, far inside this window, while idle timeouts
// worth measuring are longer than it.
const AfterResponseWindow = 20 * time.Millisecond

// Record is the life of one link as the proxy saw it on its upstream side: who closed
// first, when, and after how long the upstream side had been silent. It is the connection
// truth for a server kalab does not control. Durations count from Opened.
type Record struct {
	// ID numbers the links of a proxy in accept order, from 1.
	ID uint64
	// Opened is when the client connected to the proxy.
	Opened time.Time
	// Connected is when the upstream connection was established; 0 if it never was.
	Connected time.Duration
	// ClosedBy is the end that closed first: its FIN or reset reached the proxy first.
	ClosedBy Side
	// Reason is how it closed.
	Reason Reason
	// Closed is when the first close reached the proxy.
	Closed time.Duration
	// Idle is how long the connection had been idle when the first close came. For a
	// server's close: since the last byte the server sent (its idle clock starts with its
	// last response), not counting a TLS close_notify or HTTP/2 GOAWAY sent with the close.
	// For a client's close: since the last byte either way on the upstream side. Since
	// Connected when no byte crossed; -1 when the upstream never connected.
	Idle time.Duration
	// Ended is when both sockets were closed.
	Ended time.Duration
	// BytesUp and BytesDown are the bytes delivered to the upstream and to the client.
	BytesUp, BytesDown int64
	// FailedAttempt: the server closed first and the client then wrote request bytes
	// that reached the proxy's upstream side only after that close, so they never
	// reached the server (its kernel answers them with a reset). A client that then
	// sends the request on another connection without reporting an error re-sent it
	// silently. A TLS close_notify or HTTP/2 GOAWAY the client sends on seeing the close
	// is not a request and does not count (clientGoodbye).
	FailedAttempt bool
}

// connTruth is what a link records for its Record; times are nanoseconds since t0 so
// they can be updated atomically from the reader and writer goroutines.
type connTruth struct {
	id                 uint64
	connected          atomic.Int64
	lastUpstream       atomic.Int64 // last byte read from or written to the upstream
	bytesUp, bytesDown atomic.Int64
	// The upstream's latest chunk: when it came and its size, and when the one before it
	// came. Only the reader of the upstream writes them.
	lastRead, lastReadSize, prevRead atomic.Int64
	lastReadGoodbye                  atomic.Bool  // the last chunk read is a goodbye by its bytes (serverGoodbye)
	lastWrite                        atomic.Int64 // last byte written to the upstream
	// When the client's newest request bytes are due at the upstream; only the
	// client-side reader writes it (through ClientData).
	requestDue atomic.Int64

	// Set once, under Tracker.recMu.
	closedBy Side
	reason   Reason
	closed   time.Duration
	idleBase time.Duration
}

// goodbyeSize bounds a chunk a server sends as part of closing rather than as a response:
// a TLS close_notify alert (24 bytes in TLS 1.3, 31 in TLS 1.2 with AES-GCM) or an HTTP/2
// GOAWAY frame (17 bytes, about 40 under TLS). Any HTTP response is larger.
const goodbyeSize = 64

// clientGoodbye reports whether a client chunk is part of closing rather than a request:
// a TLS alert record (type 21, or in TLS 1.3 an application_data record of type 23 too
// small to hold a request: a close_notify is 24 bytes) or a small HTTP/2 frame (a
// GOAWAY: its length's first byte is 0). An HTTP/1.1 request starts with a method's
// letter and is never one of these.
func clientGoodbye(data []byte) bool {
	if len(data) == 0 || len(data) > goodbyeSize {
		return false
	}
	switch data[0] {
	case 0x15, 0x17, 0x00:
		return true
	}
	return false
}

// Tracker keeps what a link records for its Record, for the real link and the
// virtual one alike: each notes the chunks it carries, the closes it sees and its upstream
// connect through these methods, and builds the record with Record at teardown. Begin
// starts it; its methods are safe for concurrent use from the link's goroutines.
type Tracker struct {
	t0    time.Time  // when the client connected: the modelled SYN
	recMu sync.Mutex // guards truth's set-once fields
	truth connTruth
}

// Begin starts the record of the link numbered id, which the client opened at t0.
func (l *Tracker) Begin(t0 time.Time, id uint64) { l.t0, l.truth.id = t0, id }

// Opened is when the client connected: the modelled SYN.
func (l *Tracker) Opened() time.Time { return l.t0 }

// Delivered counts n bytes delivered to the upstream (up) or to the client.
func (l *Tracker) Delivered(up bool, n int) {
	if up {
		l.truth.bytesUp.Add(int64(n))
	} else {
		l.truth.bytesDown.Add(int64(n))
	}
}

// ClientData notes a client chunk queued for the upstream at due.
func (l *Tracker) ClientData(data []byte, due time.Time) {
	if !clientGoodbye(data) {
		l.truth.requestDue.Store(l.since(due))
	}
}

// since returns t as nanoseconds after the link opened, never negative.
func (l *Tracker) since(t time.Time) int64 { return max(int64(t.Sub(l.t0)), 0) }

// WroteUpstream notes a chunk written to the upstream at t.
func (l *Tracker) WroteUpstream(t time.Time) {
	l.truth.lastWrite.Store(l.since(t))
	l.upstreamActive(t)
}

// upstreamActive notes a byte crossing the upstream socket at t.
func (l *Tracker) upstreamActive(t time.Time) {
	n := l.since(t)
	for {
		cur := l.truth.lastUpstream.Load()
		if n <= cur || l.truth.lastUpstream.CompareAndSwap(cur, n) {
			return
		}
	}
}

// ServerData notes a chunk read from the upstream, stamped t.
func (l *Tracker) ServerData(t time.Time, data []byte) {
	l.truth.prevRead.Store(l.truth.lastRead.Load())
	l.truth.lastRead.Store(l.since(t))
	l.truth.lastReadSize.Store(int64(len(data)))
	l.truth.lastReadGoodbye.Store(serverGoodbye(data))
	l.upstreamActive(t)
}

// serverGoodbye reports whether a server chunk is, by its bytes, part of closing: a TLS
// 1.2 alert record (type 21), a TLS 1.3 record of exactly 24 bytes (type 23: 5 of header,
// 16 of tag, and 3 of plaintext, which is an alert's 2 and its type; no HTTP response or
// HTTP/2 frame is that small), or a plain HTTP/2 GOAWAY frame (type 7) alone. Known by
// content, it needs no timing: on a busy machine the proxy can read a close_notify and
// the FIN behind it tens of milliseconds apart (34.6 ms beside two busy loops, where the
// timing rule alone measured an idle close of 34.6 ms instead of 2 s).
func serverGoodbye(data []byte) bool {
	switch {
	case len(data) >= 5 && len(data) <= goodbyeSize && data[0] == 0x15 && data[1] == 0x03:
		return true
	case len(data) == 24 && data[0] == 0x17 && data[1] == 0x03:
		return true
	case len(data) >= 17 && len(data) <= goodbyeSize && data[0] == 0 && data[3] == 0x07:
		return int(data[1])<<8|int(data[2]) == len(data)-9
	}
	return false
}

// CloseSeen records the first close of the link; later ones are ignored.
func (l *Tracker) CloseSeen(by Side, rst bool, at time.Time) {
	l.recMu.Lock()
	defer l.recMu.Unlock()
	if l.truth.closedBy != "" {
		return
	}
	t := &l.truth
	t.closedBy = by
	t.closed = time.Duration(l.since(at))
	// A server's idle clock starts when it sends its last response, so its close counts
	// from the last byte it sent: a client's later control frames (an HTTP/2
	// WINDOW_UPDATE, a TLS ticket acknowledgment) do not restart it. A client's close
	// counts from the last byte either way.
	last := t.lastUpstream.Load()
	if by == SideServer {
		last = t.lastRead.Load()
		// A goodbye (close_notify, GOAWAY) just before the FIN belongs to the close; a
		// small chunk that answers what the client just sent is a response.
		if last > 0 && (t.lastReadGoodbye.Load() || t.lastReadSize.Load() <= goodbyeSize && t.closed-time.Duration(last) < AfterResponseWindow &&
			time.Duration(last-t.lastWrite.Load()) >= AfterResponseWindow) {
			last = t.prevRead.Load()
		}
	}
	t.idleBase = time.Duration(last)
	if last == 0 {
		t.idleBase = time.Duration(t.connected.Load())
	}
	switch {
	case rst:
		t.reason = ReasonReset
	case by == SideServer && t.lastRead.Load() > 0 && t.closed-t.idleBase < AfterResponseWindow:
		t.reason = ReasonAfterResponse
	default:
		t.reason = ReasonIdle
	}
}

// Connected notes the upstream connection established at t.
func (l *Tracker) Connected(t time.Time) {
	l.truth.connected.Store(max(l.since(t), 1))
}

// RefusedAt records, unless a close came first, that the upstream refused the link at at.
func (l *Tracker) RefusedAt(at time.Time) {
	l.recMu.Lock()
	defer l.recMu.Unlock()
	if l.truth.closedBy == "" {
		l.truth.closedBy, l.truth.reason, l.truth.closed = SideServer, ReasonRefused, time.Duration(l.since(at))
	}
}

// Record builds the link's Record at teardown.
func (l *Tracker) Record(ended time.Time) Record {
	l.recMu.Lock()
	defer l.recMu.Unlock()
	r := Record{
		ID:        l.truth.id,
		Opened:    l.t0,
		Connected: time.Duration(l.truth.connected.Load()),
		ClosedBy:  l.truth.closedBy,
		Reason:    l.truth.reason,
		Closed:    l.truth.closed,
		Ended:     time.Duration(l.since(ended)),
		BytesUp:   l.truth.bytesUp.Load(),
		BytesDown: l.truth.bytesDown.Load(),
		Idle:      -1,
	}
	r.FailedAttempt = r.ClosedBy == SideServer && r.Reason != ReasonRefused && time.Duration(l.truth.requestDue.Load()) > r.Closed
	if r.ClosedBy == "" {
		r.ClosedBy, r.Reason, r.Closed = SideKalab, ReasonRunEnd, r.Ended
	}
	if r.Reason == ReasonRefused {
		return r
	}
	if r.Connected > 0 {
		base := l.truth.idleBase
		if r.ClosedBy == SideKalab {
			base = time.Duration(max(l.truth.lastUpstream.Load(), l.truth.connected.Load()))
		}
		r.Idle = max(r.Closed-base, 0)
	}
	return r
}
