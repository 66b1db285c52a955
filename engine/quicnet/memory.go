package quicnet

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/loopback"
)

const (
	// firstPort is where Memory starts counting the ports it picks, so that a run's
	// addresses are the same every time and stand apart from engine/vnet's TCP ports.
	firstPort = 20000
	// DefaultQueueLen is a Memory socket's receive queue, in datagrams: Linux's default
	// receive buffer (about 208 KiB) holds some 150 full-size QUIC datagrams, and a
	// reader in a bubble drains its queue before the clock moves, so this only binds
	// when a reader stops reading.
	DefaultQueueLen = 1024
)

// Memory is an in-memory datagram network for the virtual clock. Its methods and its
// sockets' methods are safe for concurrent use.
type Memory struct {
	// QueueLen is each socket's receive queue in datagrams, DefaultQueueLen when zero;
	// a socket takes the value when it is opened.
	QueueLen int

	mu    sync.Mutex
	next  int
	socks map[netip.AddrPort]*memConn

	delivered, overflow, unbound atomic.Int64
	onEvent                      func()
}

// MemoryStats counts what a Memory network did with the datagrams written to it.
type MemoryStats struct {
	Delivered int64 // put in a receiver's queue
	Overflow  int64 // dropped because the receiver's queue was full
	Unbound   int64 // dropped because nobody had bound the destination
}

// NewMemory returns an empty network.
func NewMemory() *Memory {
	return &Memory{next: firstPort, socks: make(map[netip.AddrPort]*memConn)}
}

// SetOnEvent sets f to be called after each datagram delivered: the virtual clock's
// watchdog takes deliveries as the sign that a run advances. Set it before the network is
// used.
func (m *Memory) SetOnEvent(f func()) { m.onEvent = f }

// Stats returns the network's counts so far.
func (m *Memory) Stats() MemoryStats {
	return MemoryStats{Delivered: m.delivered.Load(), Overflow: m.overflow.Load(), Unbound: m.unbound.Load()}
}

// ListenPacket binds addr, a loopback host:port. Port 0 gets the next free port counting
// up from 20000, so the same calls in the same order get the same addresses.
func (m *Memory) ListenPacket(addr string) (net.PacketConn, error) {
	a, err := loopback.Check(addr, false)
	if err != nil {
		return nil, fmt.Errorf("quicnet: %w", err)
	}
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		return nil, fmt.Errorf("quicnet: %q: %w", addr, err)
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	m.mu.Lock()
	defer m.mu.Unlock()
	if ap.Port() == 0 {
		port, ok := m.freePort(ap.Addr())
		if !ok {
			return nil, m.bindErr(ap, syscall.EADDRNOTAVAIL)
		}
		ap = netip.AddrPortFrom(ap.Addr(), port)
	} else if m.socks[ap] != nil {
		return nil, m.bindErr(ap, syscall.EADDRINUSE)
	}
	qlen := m.QueueLen
	if qlen <= 0 {
		qlen = DefaultQueueLen
	}
	c := &memConn{
		m:     m,
		ap:    ap,
		laddr: net.UDPAddrFromAddrPort(ap),
		queue: make(chan datagram, qlen),
		done:  make(chan struct{}),
		wake:  make(chan struct{}),
	}
	m.socks[ap] = c
	return c, nil
}

func (m *Memory) bindErr(ap netip.AddrPort, errno syscall.Errno) error {
	return &net.OpError{Op: "listen", Net: "udp", Addr: net.UDPAddrFromAddrPort(ap), Err: os.NewSyscallError("bind", errno)}
}

// freePort picks the next port not bound on ip, wrapping to firstPort after 65535.
func (m *Memory) freePort(ip netip.Addr) (uint16, bool) {
	for range 65536 - firstPort {
		p := uint16(m.next)
		if m.next++; m.next > 65535 {
			m.next = firstPort
		}
		if m.socks[netip.AddrPortFrom(ip, p)] == nil {
			return p, true
		}
	}
	return 0, false
}

// Close closes every socket still open, so that every blocked read returns.
func (m *Memory) Close() {
	m.mu.Lock()
	socks := make([]*memConn, 0, len(m.socks))
	for _, c := range m.socks {
		socks = append(socks, c)
	}
	m.mu.Unlock()
	for _, c := range socks {
		_ = c.Close()
	}
}

func (m *Memory) deliver(to netip.AddrPort, d datagram) {
	m.mu.Lock()
	c := m.socks[to]
	m.mu.Unlock()
	if c == nil {
		m.unbound.Add(1)
		return
	}
	select {
	case c.queue <- d:
		m.delivered.Add(1)
		if m.onEvent != nil {
			m.onEvent()
		}
	default:
		m.overflow.Add(1)
	}
}

type datagram struct {
	b    []byte
	from *net.UDPAddr
}

// memConn is one socket of a Memory network. Its queue is never closed, so a write
// racing Close cannot panic; done tells readers the socket is gone.
type memConn struct {
	m     *Memory
	ap    netip.AddrPort
	laddr *net.UDPAddr
	queue chan datagram
	done  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	deadline time.Time
	wake     chan struct{} // closed and replaced when the deadline changes
}

func (c *memConn) LocalAddr() net.Addr { return c.laddr }

func (c *memConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Source: c.laddr, Err: err}
}

func (c *memConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		select {
		case <-c.done:
			return 0, nil, c.opErr("read", net.ErrClosed)
		default:
		}
		c.mu.Lock()
		dl, wake := c.deadline, c.wake
		c.mu.Unlock()
		var t *time.Timer
		var expire <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, nil, c.opErr("read", os.ErrDeadlineExceeded)
			}
			t = time.NewTimer(d)
			expire = t.C
		}
		n, from, again, err := c.wait(p, expire, wake)
		if t != nil {
			t.Stop()
		}
		if !again {
			return n, from, err
		}
	}
}

// wait blocks for a datagram, Close, the deadline, or a new deadline (again).
func (c *memConn) wait(p []byte, expire <-chan time.Time, wake <-chan struct{}) (n int, from net.Addr, again bool, err error) {
	select {
	case d := <-c.queue:
		return copy(p, d.b), d.from, false, nil
	case <-c.done:
		return 0, nil, false, c.opErr("read", net.ErrClosed)
	case <-expire:
		return 0, nil, false, c.opErr("read", os.ErrDeadlineExceeded)
	case <-wake:
		return 0, nil, true, nil
	}
}

// WriteTo copies p to the socket bound at addr; with nobody there, or a full queue, the
// datagram is lost and the write still succeeds, as UDP's does.
func (c *memConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	select {
	case <-c.done:
		return 0, c.opErr("write", net.ErrClosed)
	default:
	}
	to, err := addrPort(addr)
	if err != nil {
		return 0, c.opErr("write", err)
	}
	c.m.deliver(to, datagram{b: append([]byte(nil), p...), from: c.laddr})
	return len(p), nil
}

func (c *memConn) Close() error {
	closed := false
	c.once.Do(func() {
		closed = true
		c.m.mu.Lock()
		if c.m.socks[c.ap] == c {
			delete(c.m.socks, c.ap)
		}
		c.m.mu.Unlock()
		close(c.done)
	})
	if !closed {
		return c.opErr("close", net.ErrClosed)
	}
	return nil
}

func (c *memConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *memConn) SetReadDeadline(t time.Time) error {
	select {
	case <-c.done:
		return c.opErr("set", net.ErrClosed)
	default:
	}
	c.mu.Lock()
	c.deadline = t
	close(c.wake)
	c.wake = make(chan struct{})
	c.mu.Unlock()
	return nil
}

// SetWriteDeadline does nothing: a write never blocks.
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// SetReadBuffer and SetWriteBuffer do nothing, and exist because quic-go warns about a
// connection that cannot have its buffers raised.
func (c *memConn) SetReadBuffer(int) error  { return nil }
func (c *memConn) SetWriteBuffer(int) error { return nil }

// addrPort turns a destination into the key sockets are bound under.
func addrPort(a net.Addr) (netip.AddrPort, error) {
	var ap netip.AddrPort
	if u, ok := a.(*net.UDPAddr); ok && u != nil {
		ap = u.AddrPort()
	} else if a != nil {
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return netip.AddrPort{}, err
		}
	}
	if !ap.IsValid() {
		return netip.AddrPort{}, fmt.Errorf("invalid address %v", a)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}
