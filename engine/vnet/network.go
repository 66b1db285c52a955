package vnet

import (
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

// Port ranges used when a port is allocated. A dialing end's port goes past 65535, which
// no kernel would give: an in-memory network has no 16-bit port field, and a burst of
// 100,000 connections through a link needs twice that many dialing ends at once. Nothing
// in kalab parses such an address back into a real one.
const (
	listenPortFirst = 10000
	listenPortLast  = 39999
	dialPortFirst   = 40000
	dialPortLast    = 40000 + 1<<20 - 1
)

var loopbackIP = net.IPv4(127, 0, 0, 1).To4()

// Network is one run's in-memory network. All methods are safe for concurrent use.
type Network struct {
	onEvent atomic.Pointer[func()]
	order   atomic.Pointer[orderer] // set by Order

	dials, refused, accepted, open atomic.Int64
	activeDial, activeAccept       atomic.Int64

	mu         sync.Mutex
	closed     bool
	listeners  map[int]*Listener
	activeAt   map[int]*atomic.Int64 // active closes of the connections each port accepted
	pairs      map[int]*pair         // open connections by the dialer's local port
	nextListen int
	nextDial   int
}

// Stats holds counters since New.
type Stats struct {
	// Dials counts connections established by Dial; Refused counts refused Dials.
	Dials, Refused int64
	// Accepted counts connections returned by Accept.
	Accepted int64
	// Open counts connections whose two ends are not both closed.
	Open int64
	// ActiveCloses counts connections closed actively, that is whose first FIN
	// was sent by one of their ends (the end that would hold TIME_WAIT), split by
	// the end that sent it: the dialing end or the accepted end. ActiveCloses is
	// their sum. A reset is not an active close.
	ActiveCloses, ActiveClosesDial, ActiveClosesAccept int64
}

// New returns an empty network.
func New() *Network {
	return &Network{
		listeners:  make(map[int]*Listener),
		activeAt:   make(map[int]*atomic.Int64),
		pairs:      make(map[int]*pair),
		nextListen: listenPortFirst,
		nextDial:   dialPortFirst,
	}
}

// SetOnEvent sets f to be called after each delivery: a write reaching the peer, a
// FIN, a reset, a connection queued by Dial and one returned by Accept. f is called
// synchronously by the goroutine that caused the event, with no lock of the network
// held; it should be cheap. Set it before the network is used; nil removes it.
func (n *Network) SetOnEvent(f func()) {
	if f == nil {
		n.onEvent.Store(nil)
		return
	}
	n.onEvent.Store(&f)
}

// Event counts an event of another network the run uses (an HTTP/3 run's datagrams) as
// this one's: the virtual clock's watchdog takes events as the sign that a run advances.
func (n *Network) Event() { n.event() }

func (n *Network) event() {
	if f := n.onEvent.Load(); f != nil {
		(*f)()
	}
}

// Stats returns the counters since New.
func (n *Network) Stats() Stats {
	d, a := n.activeDial.Load(), n.activeAccept.Load()
	return Stats{
		Dials:              n.dials.Load(),
		Refused:            n.refused.Load(),
		Accepted:           n.accepted.Load(),
		Open:               n.open.Load(),
		ActiveCloses:       d + a,
		ActiveClosesDial:   d,
		ActiveClosesAccept: a,
	}
}

// Listen binds addr, "host:port" with the host ignored. An empty addr or port 0
// picks the next free port from 10000 upward; a fixed port must not be bound by
// another listener, or Listen fails with an error wrapping syscall.EADDRINUSE.
func (n *Network) Listen(addr string) (*Listener, error) {
	port := 0
	if addr != "" {
		p, err := parsePort(addr)
		if err != nil {
			return nil, &net.OpError{Op: "listen", Net: "tcp", Err: err}
		}
		port = p
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(port), Err: net.ErrClosed}
	}
	if port == 0 {
		port = n.allocLocked(&n.nextListen, listenPortFirst, listenPortLast)
		if port == 0 {
			n.mu.Unlock()
			return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(0), Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
		}
	} else if n.listeners[port] != nil {
		n.mu.Unlock()
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(port), Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	l := &Listener{n: n, addr: tcpAddr(port), notify: make(chan struct{}, 1)}
	n.listeners[port] = l
	if n.activeAt[port] == nil {
		n.activeAt[port] = new(atomic.Int64)
	}
	l.active = n.activeAt[port]
	n.mu.Unlock()
	return l, nil
}

// allocLocked returns the first port from *next on, cycling through [first, last],
// that no listener and no open connection uses, and advances *next past it. It
// returns 0 when every port of the range is in use.
func (n *Network) allocLocked(next *int, first, last int) int {
	p := *next
	for range last - first + 1 {
		if p > last || p < first {
			p = first
		}
		if n.listeners[p] == nil && n.pairs[p] == nil {
			*next = p + 1
			return p
		}
		p++
	}
	return 0
}

// Dial connects to the listener bound at addr's port. The connection is put in the
// listener's accept queue and Dial returns at once. With no listener there, or a
// closed network, Dial fails with a *net.OpError wrapping syscall.ECONNREFUSED.
// If ctx is already done, Dial returns its error (wrapped in a *net.OpError).
func (n *Network) Dial(ctx context.Context, addr string) (*Conn, error) {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
		}
	}
	port, err := parsePort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	raddr := tcpAddr(port)
	n.mu.Lock()
	l := n.listeners[port]
	if n.closed || l == nil || l.closed || port == 0 {
		n.mu.Unlock()
		n.refused.Add(1)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	lport := n.allocLocked(&n.nextDial, dialPortFirst, dialPortLast)
	if lport == 0 {
		n.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)}
	}
	laddr := tcpAddr(lport)
	p := &pair{n: n, port: lport, active: l.active}
	cl := &Conn{p: p, dialer: true, local: laddr, remote: raddr, notify: make(chan struct{}, 1)}
	sv := &Conn{p: p, local: raddr, remote: laddr, notify: make(chan struct{}, 1)}
	cl.peer, sv.peer = sv, cl
	p.ends = [2]*Conn{cl, sv}
	n.pairs[lport] = p
	l.queue = append(l.queue, sv)
	signal(l.notify)
	n.dials.Add(1)
	n.open.Add(1)
	n.mu.Unlock()
	n.event()
	return cl, nil
}

// DialContext is Dial with http.Transport.DialContext's signature; network must be
// "tcp", "tcp4" or "tcp6".
func (n *Network) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	c, err := n.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close closes every listener and closes every connection still open, as Abort
// does, so that every Accept, Read and Write blocked on the network returns an
// error. Later Listens fail and later Dials are refused.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	ls := make([]*Listener, 0, len(n.listeners))
	for _, l := range n.listeners {
		ls = append(ls, l)
	}
	ps := make([]*pair, 0, len(n.pairs))
	for _, p := range n.pairs {
		ps = append(ps, p)
	}
	n.mu.Unlock()
	slices.SortFunc(ls, func(a, b *Listener) int { return a.addr.Port - b.addr.Port })
	slices.SortFunc(ps, func(a, b *pair) int { return a.port - b.port })
	for _, l := range ls {
		_ = l.Close() // shutting down: nothing waits on how this close went
	}
	for _, p := range ps {
		// shutting down: nothing waits on how this close went
		_ = p.ends[0].close(true)
		_ = p.ends[1].close(true)
	}
	if o := n.order.Load(); o != nil {
		o.close()
	}
	return nil
}

// removePair forgets p once both its ends are closed, freeing its port.
func (n *Network) removePair(p *pair) {
	n.mu.Lock()
	if n.pairs[p.port] == p {
		delete(n.pairs, p.port)
		n.open.Add(-1)
	}
	n.mu.Unlock()
}

// Listener is a listening port of a Network. It implements net.Listener.
type Listener struct {
	n      *Network
	addr   *net.TCPAddr
	notify chan struct{}
	active *atomic.Int64 // active closes of the connections dialled to this port

	// Guarded by n.mu.
	closed bool
	queue  []*Conn
}

// Accept waits for and returns the next connection queued by Dial. After Close it
// returns a *net.OpError wrapping net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	n := l.n
	for {
		n.mu.Lock()
		if l.closed {
			n.mu.Unlock()
			signal(l.notify) // let another Accept see the close
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
		}
		if len(l.queue) > 0 {
			c := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			if len(l.queue) > 0 {
				signal(l.notify)
			}
			n.mu.Unlock()
			n.accepted.Add(1)
			n.event()
			return c, nil
		}
		n.mu.Unlock()
		<-l.notify
	}
}

// Close stops listening: Accept returns an error, the connections queued and not
// yet accepted are reset, and the port is free for a new Listen.
func (l *Listener) Close() error {
	n := l.n
	n.mu.Lock()
	if l.closed {
		n.mu.Unlock()
		return &net.OpError{Op: "close", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
	l.closed = true
	if n.listeners[l.addr.Port] == l {
		delete(n.listeners, l.addr.Port)
	}
	q := l.queue
	l.queue = nil
	signal(l.notify)
	n.mu.Unlock()
	for _, c := range q {
		_ = c.close(true) // shutting down: nothing waits on how this close went
	}
	return nil
}

// Addr returns the listener's address, a *net.TCPAddr.
func (l *Listener) Addr() net.Addr { return l.addr }

// QueueLen returns how many connections wait in the accept queue.
func (l *Listener) QueueLen() int {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	return len(l.queue)
}

func tcpAddr(port int) *net.TCPAddr { return &net.TCPAddr{IP: loopbackIP, Port: port} }

func parsePort(addr string) (int, error) {
	_, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	if ps == "" {
		return 0, nil
	}
	p, err := strconv.Atoi(ps)
	if err != nil || p < 0 || p > 65535 {
		return 0, &net.AddrError{Err: "invalid port", Addr: addr}
	}
	return p, nil
}

// signal wakes the waiter on ch, if any, without blocking; ch has capacity 1.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// ActiveClosesAt counts the active closes (see Stats) of the connections dialled to the
// port of addr, by either end, since New: the TIME_WAIT a kernel would hold on that
// port's connections. A port never listened on has none.
func (n *Network) ActiveClosesAt(addr string) int64 {
	port, err := parsePort(addr)
	if err != nil {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.activeAt[port]; c != nil {
		return c.Load()
	}
	return 0
}
