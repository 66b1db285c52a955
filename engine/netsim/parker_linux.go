package netsim

import (
	"os"
	"sync"
	"syscall"
)

// idleParker holds the readers of idle directions with no goroutine at all:
// an idle direction's source socket waits in an epoll set of the proxy's
// (EPOLLONESHOT), and the one goroutine that watches the set starts the
// direction's reader again once the socket is readable, closed or reset.
// The set's own descriptor waits on Go's netpoller like any socket, so the
// watcher costs nothing while nothing happens. Only a direction idle for
// idleHandoff parks here, so a busy link pays nothing per chunk for it.
type idleParker struct {
	file *os.File
	rc   syscall.RawConn

	mu     sync.Mutex
	parked map[int32]*direction
	next   int32
	events [64]syscall.EpollEvent // run's
}

// newIdleParker makes the proxy's parker, or nil where it cannot (then idle
// readers stay goroutines, handed to fresh ones: readLoop).
func newIdleParker() *idleParker {
	if portable {
		return nil
	}
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	f := os.NewFile(uintptr(fd), "netsim-idle-parker") // non-blocking: on the netpoller
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil
	}
	return &idleParker{file: f, rc: rc, parked: make(map[int32]*direction)}
}

// park puts d's source socket in the set; false when it cannot (the socket
// closed meanwhile, or epoll failed), and d's reader must go on itself.
func (ip *idleParker) park(d *direction) bool {
	if ip == nil {
		return false
	}
	ip.mu.Lock()
	if d.parkKey == 0 {
		ip.next++
		if ip.next <= 0 {
			ip.next = 1
		}
		d.parkKey = ip.next
	}
	ip.parked[d.parkKey] = d
	ip.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: d.parkKey}
	var ctlErr error
	err := ip.rc.Control(func(epfd uintptr) {
		ctlErr = d.srcControl(func(fd uintptr) error {
			// Marked before the call: once it succeeds, run may already have
			// started d's next reader, and this one must not touch d again.
			op := syscall.EPOLL_CTL_MOD
			if !d.parkAdded {
				op, d.parkAdded = syscall.EPOLL_CTL_ADD, true
			}
			err := syscall.EpollCtl(int(epfd), op, int(fd), &ev)
			if err != nil && op == syscall.EPOLL_CTL_ADD {
				d.parkAdded = false
			}
			return err
		})
	})
	if err != nil || ctlErr != nil {
		ip.forget(d)
		return false
	}
	return true
}

// forget drops d, whose link is gone, if it is parked.
func (ip *idleParker) forget(d *direction) {
	if ip == nil {
		return
	}
	ip.mu.Lock()
	if d.parkKey != 0 && ip.parked[d.parkKey] == d {
		delete(ip.parked, d.parkKey)
	}
	ip.mu.Unlock()
}

// run watches the set until close and starts the reader of each direction
// whose socket became ready. p.wg counts it.
func (ip *idleParker) run(p *Proxy) {
	defer p.wg.Done()
	for {
		n := 0
		err := ip.rc.Read(func(epfd uintptr) bool {
			var werr error
			for {
				n, werr = syscall.EpollWait(int(epfd), ip.events[:], 0)
				if werr != syscall.EINTR {
					break
				}
			}
			return n > 0 || werr != nil // nothing ready: wait on the netpoller
		})
		if err != nil {
			return // closed
		}
		for _, ev := range ip.events[:max(n, 0)] {
			ip.mu.Lock()
			d := ip.parked[ev.Fd]
			delete(ip.parked, ev.Fd)
			ip.mu.Unlock()
			if d != nil {
				p.wg.Add(1) // this goroutine is counted, so this cannot race Wait
				go d.readLoop()
			}
		}
	}
}

// close ends run; parked directions are the links' to tear down.
func (ip *idleParker) close() {
	if ip != nil {
		_ = ip.file.Close()
	}
}
