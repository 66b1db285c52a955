package h3

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Error codes of RFC 9114 section 8.1 the client sends.
const (
	codeNoError         = 0x100 // H3_NO_ERROR: the client is done with the connection
	codeRequestCanceled = 0x10c // H3_REQUEST_CANCELLED: the request's time ran out
)

// qconn is one QUIC connection of the client, on a socket of its own: ListenPacket gives
// each connection its socket, as browsers and curl do, so a NAT sees one flow per
// connection and the flow ends with it.
type qconn struct {
	id      uint64
	pc      net.PacketConn
	tr      *quic.Transport
	conn    *quic.Conn
	trace   *connTrace
	started time.Time // when the dial began

	mu    sync.Mutex
	cc    *http3.ClientConn // runs the control streams; replaced after a 0-RTT rejection
	reset bool              // cc was replaced after the rejection

	uses      atomic.Int64  // requests sent on it, kalab's own count (Event.Reused)
	counted   atomic.Bool   // its completed handshake is in the client's stats
	attempted atomic.Bool   // a request went out in 0-RTT
	rejected  atomic.Bool   // the server rejected the 0-RTT data
	broken    atomic.Bool   // a request met the connection's end
	done      chan struct{} // closed once the transport and the socket are closed
}

// dial opens a socket and dials one connection on it. With early set it returns as soon as
// 0-RTT keys exist (a resumed session that allows early data), otherwise once the
// handshake completed.
func (c *Client) dial(ctx context.Context, early bool) (*qconn, error) {
	pc, err := c.cfg.ListenPacket()
	if err != nil {
		return nil, err
	}
	qc := &qconn{pc: pc, tr: &quic.Transport{Conn: pc}, trace: newConnTrace(true), started: time.Now(), done: make(chan struct{})}
	dctx := context.WithValue(ctx, traceKey{}, qc.trace)
	if early {
		qc.conn, err = qc.tr.DialEarly(dctx, c.addr, c.tlsConf, c.quicConf)
	} else {
		qc.conn, err = qc.tr.Dial(dctx, c.addr, c.tlsConf, c.quicConf)
	}
	if err != nil {
		qc.closeSocket()
		return nil, err
	}
	qc.id = c.ids.Add(1)
	qc.cc = c.h3.NewClientConn(qc.conn)
	return qc, nil
}

// watch closes the connection's socket once the connection ended, whoever ended it, and
// lets go of the connection: only its trace stays, for the stats.
func (c *Client) watch(qc *qconn) {
	<-qc.conn.Context().Done()
	qc.closeSocket()
	c.mu.Lock()
	for i, o := range c.conns {
		if o == qc {
			c.conns = append(c.conns[:i], c.conns[i+1:]...)
			break
		}
	}
	if c.cur == qc {
		c.cur = nil
	}
	c.mu.Unlock()
	close(qc.done)
}

// closeSocket closes the transport, then the socket. quic-go's Transport does not own a
// socket it was given: its Close wakes the read loop with a read deadline and waits for it.
func (qc *qconn) closeSocket() {
	// shutting down: nothing waits on how this close went
	_ = qc.tr.Close()
	_ = qc.pc.Close()
}

// alive reports whether the connection can take a request. quic-go fails the streams with
// the connection's error before it cancels the connection's context, so a request that
// met the end marks it broken: a retry right after must not find it alive.
func (qc *qconn) alive() bool { return !qc.broken.Load() && qc.conn.Context().Err() == nil }

// handshakeDone reports whether the handshake completed.
func (qc *qconn) handshakeDone() bool {
	select {
	case <-qc.conn.HandshakeComplete():
		return true
	default:
		return false
	}
}

// waitHandshake waits until the handshake completed, the connection failed or ctx ended.
func (qc *qconn) waitHandshake(ctx context.Context) error {
	select {
	case <-qc.conn.HandshakeComplete():
		return nil
	case <-qc.conn.Context().Done():
		return context.Cause(qc.conn.Context())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recover makes the connection usable after the server rejected its 0-RTT data: quic-go
// then fails every stream opened before the handshake, the HTTP/3 control streams among
// them, so once the handshake completed (NextConnection) the control streams start over on
// a new http3.ClientConn. Every request that met the rejection calls it; one replaces cc.
func (c *Client) recover(ctx context.Context, qc *qconn) error {
	if _, err := qc.conn.NextConnection(ctx); err != nil {
		return err
	}
	qc.mu.Lock()
	if !qc.reset {
		qc.reset, qc.cc = true, c.h3.NewClientConn(qc.conn)
	}
	qc.mu.Unlock()
	return nil
}

// roundTrip sends the client's request on a new stream of qc and reads the response. The
// stream is cancelled when ctx ends, so a request never outlives its attempt.
func (c *Client) roundTrip(ctx context.Context, qc *qconn) (response, error) {
	str, err := qc.conn.OpenStreamSync(ctx)
	if err != nil {
		return response{}, err
	}
	stop := context.AfterFunc(ctx, func() {
		str.CancelRead(codeRequestCanceled)
		str.CancelWrite(codeRequestCanceled)
	})
	defer stop()
	if _, err = str.Write(c.request); err == nil {
		err = str.Close()
	}
	var resp response
	if err == nil {
		resp, err = readResponse(str, c.cfg.Method == "HEAD")
	}
	switch {
	case errors.Is(err, quic.Err0RTTRejected):
		// The stream died with the 0-RTT data: cancelling it would queue RESET_STREAM and
		// STOP_SENDING for its id, which after the rejection names the re-sent request's
		// new stream (quic-go numbers streams from 0 again).
	case err != nil:
		str.CancelRead(codeRequestCanceled)
		str.CancelWrite(codeRequestCanceled)
	}
	if errors.Is(err, net.ErrClosed) { // quic-go's connection errors all unwrap to it
		qc.broken.Store(true)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err) // the attempt's time ran out: that is the cause
		}
	}
	return resp, err
}
