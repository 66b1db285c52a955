package kernel

import (
	"os"
	"sync"
	"syscall"
)

// Parker holds idle readers with no goroutine at all: an idle reader's socket waits in
// an epoll set (EPOLLONESHOT), and the one goroutine that watches the set (Run) wakes
// the reader again once the socket is readable, closed or reset. The set's own
// descriptor waits on Go's netpoller like any socket, so the watcher costs nothing while
// nothing happens.
type Parker struct {
	file *os.File
	rc   syscall.RawConn

	mu     sync.Mutex
	parked map[int32]parked
	next   int32
	events [64]syscall.EpollEvent // Run's
}

// Slot is one reader's place in a Parker, kept by the reader across its idle periods
// (its zero value is ready): its socket's key in the epoll set, and whether the socket
// is in the set.
type Slot struct {
	key   int32
	added bool
}

// Waker is a parked reader: Wake starts it again, on a goroutine of its own, and
// returns.
type Waker interface{ Wake() }

// parked is a reader in the set.
type parked struct {
	s *Slot
	r Waker
}

// NewParker makes a parker, or returns nil where it cannot (Portable, or epoll failed):
// then idle readers stay goroutines.
func NewParker() *Parker {
	if Portable {
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
	return &Parker{file: f, rc: rc, parked: make(map[int32]parked)}
}

// Park puts conn, the socket of reader r, in the set at r's slot s; false when it
// cannot (the socket closed meanwhile, or epoll failed), and the reader must go on
// itself. Once it returns true, Run may already have woken r.
func (ip *Parker) Park(s *Slot, r Waker, conn syscall.Conn) bool {
	if ip == nil {
		return false
	}
	ip.mu.Lock()
	if s.key == 0 {
		ip.next++
		if ip.next <= 0 {
			ip.next = 1
		}
		s.key = ip.next
	}
	ip.parked[s.key] = parked{s, r}
	ip.mu.Unlock()
	src, err := conn.SyscallConn()
	if err != nil {
		ip.Forget(s)
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: s.key}
	var ctlErr error
	err = ip.rc.Control(func(epfd uintptr) {
		if cerr := src.Control(func(fd uintptr) { ctlErr = ip.ctl(s, epfd, fd, &ev) }); cerr != nil {
			ctlErr = cerr
		}
	})
	if err != nil || ctlErr != nil {
		ip.Forget(s)
		return false
	}
	return true
}

// ctl adds s's socket fd to the set epfd, or re-arms it there.
func (ip *Parker) ctl(s *Slot, epfd, fd uintptr, ev *syscall.EpollEvent) error {
	// Marked before the call: once it succeeds, Run may already have woken the
	// reader, and this one must not touch s again.
	op := syscall.EPOLL_CTL_MOD
	if !s.added {
		op, s.added = syscall.EPOLL_CTL_ADD, true
	}
	err := syscall.EpollCtl(int(epfd), op, int(fd), ev)
	if err != nil && op == syscall.EPOLL_CTL_ADD {
		s.added = false
	}
	return err
}

// Forget drops s, whose reader is gone, if it is parked.
func (ip *Parker) Forget(s *Slot) {
	if ip == nil {
		return
	}
	ip.mu.Lock()
	if s.key != 0 && ip.parked[s.key].s == s {
		delete(ip.parked, s.key)
	}
	ip.mu.Unlock()
}

// Run watches the set until Close and wakes the reader of each socket that became
// ready, on this goroutine: a wake function starts the reader's goroutine and returns.
func (ip *Parker) Run() {
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
			pr, ok := ip.parked[ev.Fd]
			delete(ip.parked, ev.Fd)
			ip.mu.Unlock()
			if ok {
				pr.r.Wake()
			}
		}
	}
}

// Close ends Run; the parked readers' sockets are their owners' to close.
func (ip *Parker) Close() {
	if ip != nil {
		_ = ip.file.Close()
	}
}
