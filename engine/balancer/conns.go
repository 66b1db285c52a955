package balancer

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Who closed a client-facing connection (ConnRecord.ClosedBy).
const (
	ClosedByBalancer = "balancer"
	ClosedByClient   = "client"
)

// Why a client-facing connection closed (ConnRecord.Reason).
const (
	ReasonIdle          = "idle"           // the balancer's idle timeout (Config.IdleTimeout)
	ReasonError         = "error"          // the balancer dropped it after a backend failure (PolicyClose)
	ReasonEnd           = "end"            // the balancer was closed with it open
	ReasonAfterResponse = "after_response" // the balancer closed it after a response (the client asked to)
	ReasonUnknown       = "unknown"        // the client closed it; the balancer cannot tell why
)

// ConnRecord is one client-facing connection as the balancer saw it. IDs are 1-based in
// accept order.
type ConnRecord struct {
	ID       uint64
	Opened   time.Time
	Closed   time.Time // zero while open
	ClosedBy string    // ClosedByBalancer or ClosedByClient, once closed
	Reason   string
	Requests int64
}

// connBook keeps the records of the client-facing connections.
type connBook struct {
	mu      sync.Mutex
	conns   []*trackedConn
	closing atomic.Bool // the balancer is shutting down
}

// all returns a copy of every record, in accept order.
func (c *connBook) all() []ConnRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ConnRecord, len(c.conns))
	for i, tc := range c.conns {
		out[i] = tc.rec
		out[i].Requests = tc.requests.Load()
	}
	return out
}

// trackListener wraps the client-facing listener so that each connection keeps its record.
type trackListener struct {
	net.Listener
	book *connBook
}

func (l trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.book.mu.Lock()
	defer l.book.mu.Unlock()
	tc := &trackedConn{Conn: c, book: l.book, rec: ConnRecord{ID: uint64(len(l.book.conns) + 1), Opened: time.Now()}}
	l.book.conns = append(l.book.conns, tc)
	return tc, nil
}

// trackedConn is a client-facing connection that records how it ended. net/http closes
// it after a read error, and the last one says whose move it was: waiting idle for the
// next request, a deadline is the idle timeout (the only deadline net/http sets there); EOF
// or a reset is the client. A deadline outside the idle state is net/http ending its own
// background read after a response, not a close.
type trackedConn struct {
	net.Conn
	book     *connBook
	rec      ConnRecord // guarded by book.mu
	requests atomic.Int64
	idle     atomic.Bool // net/http waits for the connection's next request
	aborted  atomic.Bool // the handler dropped the connection after a backend failure
	readErr  atomic.Pointer[error]
	once     sync.Once
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.readErr.Store(&err)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		by, why := ClosedByBalancer, ReasonAfterResponse
		var ne net.Error
		e := c.readErr.Load()
		timeout := e != nil && errors.As(*e, &ne) && ne.Timeout()
		switch {
		case c.aborted.Load():
			why = ReasonError
		case c.book.closing.Load():
			why = ReasonEnd
		case timeout && c.idle.Load():
			why = ReasonIdle
		case e != nil && !timeout && !errors.Is(*e, net.ErrClosed):
			by, why = ClosedByClient, ReasonUnknown
		}
		c.book.mu.Lock()
		c.rec.Closed, c.rec.ClosedBy, c.rec.Reason = time.Now(), by, why
		c.book.mu.Unlock()
	})
	return c.Conn.Close()
}

// CloseWrite half-closes the connection where the network can, as net/http does before it
// closes a connection the client asked to close (its lingering FIN).
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
