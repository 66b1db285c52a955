package h3

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/kalab-dev/kalab/engine/client"
)

// attempt sends the request once and fills ev as engine/client's clients do. Connect is
// what the request waited for its new connection: the handshake (QUIC's one RTT, TLS
// included) for a 1-RTT request, the dial alone for a 0-RTT one; TLS stays 0, as QUIC has
// no separate TLS phase. A 0-RTT request the server rejected goes again on the same
// connection once the handshake completed, inside the same attempt: the server never
// processed it, so it is no failure and no retry, only ZeroRTTRejected.
func (c *Client) attempt(ctx context.Context, start time.Time, ev *client.Event) client.Attempt {
	ev.ConnID, ev.ServerConn, ev.Reused, ev.Status, ev.BytesRead = 0, 0, false, 0, 0
	ev.Connect, ev.TLS, ev.FirstByte, ev.Class, ev.Error = 0, 0, 0, client.ClassNone, ""
	actx := ctx
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	var r client.Attempt
	fail := func(err error) client.Attempt {
		r.Class, r.Cancelled = Classify(err), ctx.Err() != nil
		ev.Class, ev.Error = r.Class, err.Error()
		return r
	}
	qc, fresh, err := c.conn(actx)
	if err != nil {
		return fail(fmt.Errorf("dial: %w", err))
	}
	ev.ConnID = qc.id
	ev.Reused = qc.uses.Add(1) > 1
	r.Reused = ev.Reused
	early := c.early() && !qc.handshakeDone()
	if !early {
		if err := qc.waitHandshake(actx); err != nil {
			return fail(fmt.Errorf("handshake: %w", err))
		}
	}
	if fresh {
		ev.Connect = time.Since(qc.started)
	}
	if early && qc.attempted.CompareAndSwap(false, true) {
		c.zeroAttempted.Add(1)
	}
	resp, err := c.roundTrip(actx, qc)
	if errors.Is(err, quic.Err0RTTRejected) {
		if qc.rejected.CompareAndSwap(false, true) {
			c.zeroReject.Add(1)
		}
		if err = c.recover(actx, qc); err == nil {
			resp, err = c.roundTrip(actx, qc)
		}
	}
	if early {
		// The response to a 0-RTT request can arrive before quic-go finished the handshake
		// it came with; waiting for it (no time when it came in the same flight) makes the
		// stats exact when Do returns.
		_ = qc.waitHandshake(actx)
	}
	c.observe(qc)
	ev.Status, ev.ServerConn, ev.BytesRead = resp.status, resp.serverConn, resp.bytes
	if !resp.firstByte.IsZero() {
		ev.FirstByte, r.GotByte = resp.firstByte.Sub(start), true
	}
	if err != nil {
		return fail(fmt.Errorf("request: %w", err))
	}
	return r
}

// observe counts a connection's completed handshake once: a connection, a TLS handshake,
// a resumed one, and whether the server took its 0-RTT data (quic-go's Used0RTT is set on
// the client only once the handshake showed the server accepted it).
func (c *Client) observe(qc *qconn) {
	if !qc.handshakeDone() || !qc.counted.CompareAndSwap(false, true) {
		return
	}
	c.connections.Add(1)
	st := qc.conn.ConnectionState()
	if st.TLS.DidResume {
		c.tlsResumed.Add(1)
	}
	if st.Used0RTT && qc.attempted.Load() {
		c.zeroAcc.Add(1)
	}
}

// Stats returns the cumulative counters. Every QUIC handshake is a TLS 1.3 handshake, so
// TLSHandshakes equals Connections: the connections whose handshake completed.
func (c *Client) Stats() client.Stats {
	n := c.connections.Load()
	return client.Stats{Connections: n, TLSHandshakes: n, TLSResumed: c.tlsResumed.Load(), Retries: c.retries.Load()}
}

// QUIC returns the QUIC-level counters: 0-RTT as the requests met it, the rest from
// quic-go's events on every connection the client opened.
func (c *Client) QUIC() ClientQUICStats {
	c.mu.Lock()
	traces := append([]*connTrace(nil), c.traces...)
	c.mu.Unlock()
	var sum traceSums
	for _, t := range traces {
		sum.add(t)
	}
	return ClientQUICStats{
		ZeroRTTAttempted: c.zeroAttempted.Load(),
		ZeroRTTAccepted:  c.zeroAcc.Load(),
		ZeroRTTRejected:  c.zeroReject.Load(),
		IdleTimeouts:     sum.idle,
		PingsSent:        sum.pings,
		PathMigrations:   sum.migrations,
	}
}

// Close closes every connection (H3_NO_ERROR, so the server hears of it) and returns once
// their sockets are closed and quic-go's goroutines for them ended. Requests still in
// flight fail; a dial in progress is closed when it ends.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	dialing := c.dialing
	c.mu.Unlock()
	if dialing != nil {
		<-dialing
	}
	c.mu.Lock()
	conns := append([]*qconn(nil), c.conns...)
	c.mu.Unlock()
	for _, qc := range conns {
		_ = qc.conn.CloseWithError(codeNoError, "") // shutting down: nothing waits on how this close went
	}
	for _, qc := range conns {
		<-qc.done
	}
	return nil
}
