package h3

import (
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// memNet is a datagram network in memory for the tests: every datagram takes exactly
// delay to arrive, and goes to whichever socket holds its destination address when it
// arrives (none: it is lost, as UDP to a closed port is).
type memNet struct {
	delay time.Duration

	mu   sync.Mutex
	eps  map[string]*memConn
	dead map[string]bool // unplugged addresses: nothing reaches them or leaves them
	port int
}

func newMemNet(delay time.Duration) *memNet {
	return &memNet{delay: delay, eps: map[string]*memConn{}, dead: map[string]bool{}, port: 40000}
}

type datagram struct {
	b    []byte
	from net.Addr
}

// memConn is one socket of a memNet. It implements the buffer setters quic-go looks for, so
// quic-go does not warn that it cannot size the buffers.
type memConn struct {
	n      *memNet
	in     chan datagram
	closed chan struct{}
	once   sync.Once
	wake   chan struct{} // a deadline changed: a blocked read looks again

	mu       sync.Mutex
	addr     *net.UDPAddr
	deadline chan struct{} // closed when the read deadline passed; nil: none
	timer    *time.Timer
}

// listen opens a socket at ip:port; port 0 picks the next free one.
func (n *memNet) listen(ip string, port int) *memConn {
	n.mu.Lock()
	defer n.mu.Unlock()
	if port == 0 {
		n.port++
		port = n.port
	}
	c := &memConn{n: n, in: make(chan datagram, 4096), closed: make(chan struct{}), wake: make(chan struct{}, 1),
		addr: &net.UDPAddr{IP: net.ParseIP(ip), Port: port}}
	n.eps[c.addr.String()] = c
	return c
}

// rebind moves c to a new port, as a NAT that forgot the flow maps it anew: what c sends
// comes from the new address, and the old one reaches nobody.
func (n *memNet) rebind(c *memConn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.eps, c.LocalAddr().String())
	n.port++
	c.mu.Lock()
	c.addr = &net.UDPAddr{IP: c.addr.IP, Port: n.port}
	c.mu.Unlock()
	n.eps[c.LocalAddr().String()] = c
}

// unplug cuts addr off: what is sent to it or from it is lost, as when the host is gone.
func (n *memNet) unplug(addr net.Addr) {
	n.mu.Lock()
	n.dead[addr.String()] = true
	n.mu.Unlock()
}

func (c *memConn) WriteTo(b []byte, to net.Addr) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	d := datagram{b: append([]byte(nil), b...), from: c.LocalAddr()}
	key := to.String()
	c.n.mu.Lock()
	cut := c.n.dead[d.from.String()]
	c.n.mu.Unlock()
	if cut {
		return len(b), nil
	}
	time.AfterFunc(c.n.delay, func() {
		c.n.mu.Lock()
		dst := c.n.eps[key]
		if c.n.dead[key] {
			dst = nil
		}
		c.n.mu.Unlock()
		if dst == nil {
			return
		}
		select {
		case dst.in <- d:
		case <-dst.closed:
		default: // a full queue drops, as a socket buffer does
		}
	})
	return len(b), nil
}

func (c *memConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		dl := c.deadline
		c.mu.Unlock()
		select {
		case d := <-c.in:
			return copy(b, d.b), d.from, nil
		case <-c.closed:
			return 0, nil, net.ErrClosed
		case <-dl:
			return 0, nil, os.ErrDeadlineExceeded
		case <-c.wake:
		}
	}
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	switch d := time.Until(t); {
	case t.IsZero():
		c.deadline = nil
	case d <= 0:
		c.deadline = make(chan struct{})
		close(c.deadline)
	default:
		ch := make(chan struct{})
		c.deadline, c.timer = ch, time.AfterFunc(d, func() { close(ch) })
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

func (c *memConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.n.mu.Lock()
		if c.n.eps[c.LocalAddr().String()] == c {
			delete(c.n.eps, c.LocalAddr().String())
		}
		c.n.mu.Unlock()
		c.SetReadDeadline(time.Time{})
	})
	return nil
}

func (c *memConn) LocalAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

func (c *memConn) SetDeadline(t time.Time) error    { return c.SetReadDeadline(t) }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }
func (c *memConn) SetReadBuffer(int) error          { return nil }
func (c *memConn) SetWriteBuffer(int) error         { return nil }

// addrOf is ip:port as ClientConfig.Addr wants it.
func addrOf(c *memConn) string {
	a := c.LocalAddr().(*net.UDPAddr)
	return net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
}

// listenAny is a ClientConfig.ListenPacket.
func (n *memNet) listenAny() (net.PacketConn, error) { return n.listen("10.0.0.9", 0), nil }
