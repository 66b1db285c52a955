package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/client/undiciagent"
)

// errClosed is returned to requests that arrive or wait while the client closes.
var errClosed = errors.New("client closed")

// aLongTimeAgo is a deadline in the past: setting it interrupts a blocked read or write.
var aLongTimeAgo = time.Unix(1, 0)

// counters are the atomic form of Stats.
type counters struct {
	connections, tlsHandshakes, tlsResumed, retries, hiddenRetries, h2Streams atomic.Int64
	// attemptErrors counts failed attempts by class (slot i is Classes[i]), retried ones
	// included: a balancer's backend failures that its client never saw.
	attemptErrors [len(classSlots)]atomic.Int64
}

// classSlots fixes the order of counters.attemptErrors; it mirrors Classes.
var classSlots = [...]ErrorClass{ClassReset, ClassEOF, ClassTimeout, ClassRefused, ClassTLS, ClassOther}

func (c *counters) attemptFailed(class ErrorClass) {
	for i, k := range classSlots {
		if k == class {
			c.attemptErrors[i].Add(1)
			return
		}
	}
	c.attemptErrors[len(classSlots)-1].Add(1)
}

func (c *counters) snapshot() Stats {
	return Stats{
		Connections:   c.connections.Load(),
		TLSHandshakes: c.tlsHandshakes.Load(),
		TLSResumed:    c.tlsResumed.Load(),
		Retries:       c.retries.Load(),
		HiddenRetries: c.hiddenRetries.Load(),
		H2Streams:     c.h2Streams.Load(),
		AttemptErrors: c.attemptErrorMap(),
	}
}

func (c *counters) attemptErrorMap() map[ErrorClass]int64 {
	m := make(map[ErrorClass]int64, len(classSlots))
	for i, k := range classSlots {
		m[k] = c.attemptErrors[i].Load()
	}
	return m
}

// pconn is one pooled connection of the model client.
type pconn struct {
	id     uint64
	nc     net.Conn        // what requests go through: the TCP conn or the tls.Conn over it
	raw    syscall.RawConn // the TCP socket, for the liveness peek
	mem    pendinger       // an in-memory connection, peeked instead of raw
	br     *bufio.Reader
	served int    // responses completed on this connection
	slot   *slot  // its place in a creation-order pool; nil in the others
	epoch  uint64 // the pool's epoch when it was dialled: an older one is retired (retire.go)

	// Guarded by model.mu.
	idle    bool
	life    time.Duration // idle lifetime from its last response, kept for a hand-over that is given back
	expires time.Time     // zero: no idle limit
	timer   *time.Timer   // closes the connection when its idle lifetime ends
}

// model is kalab's own HTTP/1.1 client: one host, an explicit pool, every policy visible.
type model struct {
	cfg    Config
	req    []byte
	tlsCfg *tls.Config
	stats  counters
	nextID atomic.Uint64
	ids    *atomic.Uint64 // nextID, or the counter the config shares

	mu      sync.Mutex
	idle    []*pconn      // in the order they were freed: idle[0] is the oldest
	open    int           // connections open or being dialed (they count against MaxConns)
	waiters []chan *pconn // FIFO queue of requests waiting for MaxConns; nil sent = a dial slot
	closed  bool
	slots   []*slot            // Scheduling Creation: undici's clients, in creation order
	held    *slot              // Scheduling Creation: freed by the last response, not yet given back
	heldEnd bool               // Scheduling Creation: that response closed its connection
	agent   *undiciagent.Agent // Config.DropEmptyPool: undici 7's Agent; nil otherwise
	why     map[uint64]string  // why the client closed each connection it closed itself (Reason*)
	epoch   atomic.Uint64      // Pool.Retire's count: connections dialled before the last are not reused
	retired []*pconn           // retired connections left open, closed by Close
}

func newModel(cfg Config) *model {
	m := &model{cfg: cfg, req: buildRequest(&cfg)}
	m.ids = &m.nextID
	if cfg.ConnIDs != nil {
		m.ids = cfg.ConnIDs
	}
	if cfg.TLS {
		m.tlsCfg = cfg.tlsConfig()
		m.tlsCfg.NextProtos = []string{"http/1.1"}
	}
	if cfg.Scheduling == Creation && cfg.DropEmptyPool {
		m.agent = undiciagent.New(m.tlsCfg)
	}
	return m
}

// Stats returns the cumulative counters.
func (m *model) Stats() Stats { return m.stats.snapshot() }

// Close closes idle connections, fails waiting requests, and makes busy connections close
// when their request ends.
func (m *model) Close() error {
	m.mu.Lock()
	m.closed = true
	idle := m.idle
	m.idle = nil
	for _, c := range idle {
		c.idle = false
		if c.timer != nil {
			c.timer.Stop()
		}
		m.open--
		m.closing(c, ReasonEnd)
	}
	for _, w := range m.waiters {
		w <- nil // the waiter sees closed and gives up
		m.open++
	}
	m.waiters = nil
	idle = append(idle, m.retired...)
	m.retired = nil
	m.mu.Unlock()
	for _, c := range idle {
		_ = c.nc.Close() // dropping the connection: nothing waits on how its close went
	}
	return nil
}

// Do sends one logical request, retrying as the policy allows, and reports it. The loop
// mirrors stdClient.Do on purpose: sharing it through a callback moved ev to the heap (one
// allocation per request, measured), and the model pool allocates nothing per request.
func (m *model) Do(ctx context.Context, seq int) Event {
	o := sendOpts{req: m.req, idempotent: m.cfg.idempotent(), head: m.cfg.Method == "HEAD"}
	if m.cfg.Scheduling == Creation {
		o.follows = following(ctx)
	}
	return m.do(ctx, seq, o)
}

// sendOpts is one logical request: its bytes and what the pool must know about it.
type sendOpts struct {
	req        []byte
	idempotent bool // for RetryPolicy.IdempotentOnly
	head       bool // a HEAD response has no body whatever its headers say
	fresh      bool // the first attempt must not reuse an idle connection
	follows    bool // the caller sent it straight after its previous request (see Following)
}

func (m *model) do(ctx context.Context, seq int, o sendOpts) Event {
	start := time.Now()
	ev := Event{Seq: seq, Start: start}
	for {
		ev.Attempts++
		r := m.attempt(ctx, start, &ev, &o)
		if r.class != ClassNone {
			m.stats.attemptFailed(r.class)
		}
		// A re-send may reuse an idle connection whatever the first attempt was told.
		o.fresh, o.follows = false, false
		if !shouldRetry(m.cfg.Retry, o.idempotent, ev.Attempts, r) {
			break
		}
		if m.cfg.Retry.Hidden {
			m.stats.hiddenRetries.Add(1)
		} else {
			m.stats.retries.Add(1)
		}
	}
	if m.cfg.Retry.Hidden {
		// The caller of a library that re-sends on its own sees one attempt.
		ev.HiddenRetries, ev.Attempts = ev.Attempts-1, 1
	}
	ev.Latency = time.Since(start)
	return ev
}

// attempt makes one try, overwriting the per-attempt fields of ev.
func (m *model) attempt(ctx context.Context, start time.Time, ev *Event, o *sendOpts) attemptResult {
	ev.ConnID, ev.Reused, ev.Status, ev.BytesRead, ev.ServerConn = 0, false, 0, 0, 0
	ev.BackendConn, ev.BackendAttempts, ev.BackendReused = 0, 0, false
	ev.Connect, ev.TLS, ev.FirstByte, ev.Class, ev.Error = 0, 0, 0, ClassNone, ""
	var deadline time.Time
	if m.cfg.Timeout > 0 {
		deadline = time.Now().Add(m.cfg.Timeout)
	}
	fail := func(r attemptResult, err error) attemptResult {
		if ctx.Err() != nil {
			r.cancelled = true
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		r.class = Classify(err)
		ev.Class, ev.Error = r.class, err.Error()
		return r
	}

	c, reused, err := m.get(ctx, deadline, ev, o)
	if err != nil {
		return fail(attemptResult{}, err)
	}
	ev.ConnID, ev.Reused = c.id, reused
	r := attemptResult{reused: reused}

	if !deadline.IsZero() {
		_ = c.nc.SetDeadline(deadline) // fails only on a closed connection, which the read or write that follows reports
	}
	// A cancelled caller interrupts the blocked read or write through the deadline.
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(aLongTimeAgo) }) // on a closed connection the read or write is over already
		defer func() {
			if stop != nil {
				stop()
			}
		}()
	}
	if _, err := c.nc.Write(o.req); err != nil {
		m.put(c, ReasonBroken, 0)
		return fail(r, fmt.Errorf("write request on connection %d: %w", c.id, err))
	}
	if _, err := c.br.Peek(1); err != nil {
		m.put(c, ReasonBroken, 0)
		return fail(r, fmt.Errorf("wait for response on connection %d: %w", c.id, err))
	}
	r.gotByte = true
	ev.FirstByte = time.Since(start)
	resp, err := readResponse(c.br, &m.cfg, o.head)
	ev.Status, ev.BytesRead, ev.ServerConn = resp.status, resp.body, resp.server
	ev.BackendConn, ev.BackendAttempts, ev.BackendReused = resp.backendConn, resp.backendAttempts, resp.backendReused
	if err != nil {
		m.put(c, ReasonBroken, 0)
		return fail(r, fmt.Errorf("read response on connection %d: %w", c.id, err))
	}
	c.served++
	life, pool := pooledLifetime(&m.cfg, resp.hint, resp.hasHint)
	why := m.notKept(c, resp, pool)
	if stop != nil {
		// If the interrupt already ran, the connection carries a past deadline: drop it.
		if !stop() && why == "" {
			why = ReasonBroken
		}
		stop = nil
	}
	if why == "" && !deadline.IsZero() && c.nc.SetDeadline(time.Time{}) != nil {
		why = ReasonBroken
	}
	m.put(c, why, life)
	return r
}

// notKept says why a connection that carried a whole response may not serve another ("":
// it may).
func (m *model) notKept(c *pconn, resp response, pool bool) string {
	switch {
	case !m.cfg.KeepAlive:
		return ReasonKeepAliveOff
	case !resp.keepAlive:
		return ReasonResponseClose
	case !pool:
		return ReasonHint
	case c.br.Buffered() != 0:
		return ReasonUnread
	}
	return ""
}

// get returns an idle connection to reuse or a new one, waiting in the queue when
// MaxConns connections are open. fresh skips the idle connections (HAProxy's
// "http-reuse safe" for the first request of a client connection); a connection handed
// over by a finishing request may still be reused when MaxConns makes it wait.
func (m *model) get(ctx context.Context, deadline time.Time, ev *Event, o *sendOpts) (*pconn, bool, error) {
	if m.cfg.Scheduling == Creation {
		return m.getCreation(ctx, deadline, ev, o.fresh, o.follows)
	}
	fresh := o.fresh
	var dead []*pconn
	defer func() {
		for _, c := range dead {
			_ = c.nc.Close() // dropping the connection: nothing waits on how its close went
		}
	}()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, false, errClosed
	}
	now := time.Now()
	for len(m.idle) > 0 && !fresh {
		c := m.popIdle()
		if (!c.expires.IsZero() && !now.Before(c.expires)) || (m.cfg.LivenessCheck && !c.alive(m.cfg.LivenessEOFOnly)) {
			m.open--
			dead = append(dead, c)
			continue
		}
		m.mu.Unlock()
		return c, true, nil
	}
	if m.cfg.MaxConns == 0 || m.open < m.cfg.MaxConns {
		m.open++
		m.mu.Unlock()
		return m.dialSlot(ctx, deadline, ev)
	}
	w := make(chan *pconn, 1)
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()
	return m.await(ctx, deadline, ev, w)
}

// await waits in the MaxConns queue on w, already enqueued.
func (m *model) await(ctx context.Context, deadline time.Time, ev *Event, w chan *pconn) (*pconn, bool, error) {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case c := <-w:
		return m.granted(ctx, deadline, ev, c)
	case <-ctx.Done():
		return m.abandon(w, fmt.Errorf("wait for a connection (max_conns %d): %w", m.cfg.MaxConns, ctx.Err()))
	case <-expired:
		return m.abandon(w, fmt.Errorf("wait for a connection (max_conns %d): %w", m.cfg.MaxConns, context.DeadlineExceeded))
	}
}

// granted turns what a waiter received into a connection: a handed-over one, or a dial slot.
func (m *model) granted(ctx context.Context, deadline time.Time, ev *Event, c *pconn) (*pconn, bool, error) {
	if c != nil && c.nc == nil {
		return m.dialIn(ctx, deadline, ev, c.slot) // a creation-order slot whose connection closed
	}
	if c != nil {
		return c, true, nil
	}
	m.mu.Lock()
	closed := m.closed
	if closed {
		m.open--
	}
	var s *slot
	if !closed && m.cfg.Scheduling == Creation {
		// A slot's connect failed and left room: a new client at the end (pool.js).
		s = &slot{busy: true}
		m.slots = append(m.slots, s)
	}
	m.mu.Unlock()
	if closed {
		return nil, false, errClosed
	}
	if s != nil {
		return m.dialIn(ctx, deadline, ev, s)
	}
	return m.dialSlot(ctx, deadline, ev)
}

// abandon leaves the wait queue; if a grant raced the give-up, it is passed on.
func (m *model) abandon(w chan *pconn, cause error) (*pconn, bool, error) {
	m.mu.Lock()
	for i, x := range m.waiters {
		if x == w {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			m.mu.Unlock()
			return nil, false, cause
		}
	}
	m.mu.Unlock()
	if c := <-w; c != nil && c.nc == nil {
		m.mu.Lock()
		m.open--
		c.slot.busy = false
		m.mu.Unlock()
	} else if c != nil {
		m.put(c, "", c.life)
	} else {
		m.put(nil, ReasonBroken, 0)
	}
	return nil, false, cause
}

// dialSlot dials with a slot already counted in m.open, giving the slot back on failure.
func (m *model) dialSlot(ctx context.Context, deadline time.Time, ev *Event) (*pconn, bool, error) {
	c, err := m.dial(ctx, deadline, ev, m.tlsCfg)
	if err != nil {
		m.put(nil, ReasonBroken, 0)
		return nil, false, err
	}
	return c, false, nil
}

func (m *model) dial(ctx context.Context, deadline time.Time, ev *Event, tlsCfg *tls.Config) (*pconn, error) {
	t0, epoch := time.Now(), m.epoch.Load()
	nc, err := dial(ctx, m.cfg, deadline)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", m.cfg.Addr, err)
	}
	if h := m.cfg.Handshake; h != nil {
		if err := h(ctx, t0, nc); err != nil {
			_ = nc.Close() // the error returned says what failed
			return nil, fmt.Errorf("connect to %s: %w", m.cfg.Addr, err)
		}
	}
	ev.Connect = time.Since(t0)
	m.stats.connections.Add(1)
	c := &pconn{id: m.ids.Add(1), nc: nc, epoch: epoch}
	switch tc := nc.(type) {
	case *net.TCPConn:
		c.raw, _ = tc.SyscallConn()
	case pendinger:
		c.mem = tc
	}
	if m.cfg.TLS {
		t1 := time.Now()
		tc := tls.Client(nc, tlsCfg)
		if !deadline.IsZero() {
			_ = tc.SetDeadline(deadline) // fails only on a closed connection, which the read or write that follows reports
		}
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close() // the error returned says what failed
			return nil, fmt.Errorf("tls handshake with %s: %w", m.cfg.Addr, err)
		}
		ev.TLS = time.Since(t1)
		m.stats.tlsHandshakes.Add(1)
		if tc.ConnectionState().DidResume {
			m.stats.tlsResumed.Add(1)
		}
		c.nc = tc
	}
	c.br = bufio.NewReaderSize(c.nc, 4096)
	return c, nil
}

// popIdle takes the idle connection the scheduling names. Caller holds m.mu.
func (m *model) popIdle() *pconn {
	var c *pconn
	n := len(m.idle)
	if m.cfg.Scheduling == FIFO {
		c = m.idle[0]
		copy(m.idle, m.idle[1:])
	} else {
		c = m.idle[n-1]
	}
	m.idle[n-1] = nil
	m.idle = m.idle[:n-1]
	c.idle = false
	if c.timer != nil {
		c.timer.Stop()
	}
	return c
}

// put ends a request's use of c (nil: only a dial slot is returned). why is the reason c
// may not serve another request, "" when it may; life is its idle lifetime, 0 for none.
func (m *model) put(c *pconn, why string, life time.Duration) {
	if c != nil && c.slot != nil {
		m.putCreation(c, why, life)
		return
	}
	m.mu.Lock()
	if why == "" && m.closed {
		why = ReasonEnd
	}
	if why == "" && c.epoch != m.epoch.Load() {
		m.keepRetired(c)
		m.mu.Unlock()
		return
	}
	if why == "" {
		c.life = life
		if len(m.waiters) > 0 {
			// Hand it straight to the longest waiter: it is reused with no idle time.
			w := m.waiters[0]
			m.waiters = m.waiters[1:]
			m.mu.Unlock()
			w <- c
			return
		}
		if m.cfg.MaxIdle == 0 || len(m.idle) < m.cfg.MaxIdle {
			m.pool(c, life)
			m.mu.Unlock()
			return
		}
		// The idle pool is full: like Go's Transport, the returning connection is closed.
		why = ReasonTooManyIdle
	}
	m.open--
	m.grantSlot()
	m.closing(c, why)
	m.mu.Unlock()
	if c != nil {
		_ = c.nc.Close() // dropping the connection: nothing waits on how its close went
	}
}

// closing records why the client closes c (nil: nothing to record). Caller holds m.mu.
func (m *model) closing(c *pconn, why string) {
	if c == nil {
		return
	}
	if m.why == nil {
		m.why = map[uint64]string{}
	}
	m.why[c.id] = why
}

// CloseReasons says, by connection id, why the client closed each connection it closed
// itself (the Reason constants); a connection the server or the network closed first is
// not in it.
func (m *model) CloseReasons() map[uint64]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.why)
}

// pool makes c idle for life (0: no limit). Caller holds m.mu.
func (m *model) pool(c *pconn, life time.Duration) {
	c.idle = true
	c.expires = time.Time{}
	if life > 0 {
		c.expires = time.Now().Add(life)
		if c.timer == nil {
			c.timer = time.AfterFunc(life, func() { m.expire(c) })
		} else {
			c.timer.Reset(life)
		}
	}
	m.idle = append(m.idle, c)
}

// grantSlot lets the longest waiter dial, now that a connection slot is free. Caller holds m.mu.
func (m *model) grantSlot() {
	if len(m.waiters) == 0 {
		return
	}
	w := m.waiters[0]
	m.waiters = m.waiters[1:]
	m.open++
	w <- nil
}

// expire closes c if it is still idle and its lifetime has ended.
func (m *model) expire(c *pconn) {
	m.mu.Lock()
	if !c.idle || time.Now().Before(c.expires) {
		m.mu.Unlock()
		return
	}
	for i, x := range m.idle {
		if x == c {
			m.idle = append(m.idle[:i], m.idle[i+1:]...)
			break
		}
	}
	c.idle = false
	if c.slot != nil && c.slot.idle == c {
		c.slot.idle = nil // the slot stays in its place, empty
	}
	m.open--
	m.grantSlot()
	m.closing(c, ReasonIdle)
	gone := m.disconnect(c.slot != nil) // undici's keepAliveTimeout destroys the socket: its 'close' follows
	m.mu.Unlock()
	_ = c.nc.Close() // dropping the connection: nothing waits on how its close went
	closeAll(gone)
}
