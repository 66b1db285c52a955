package netsim

import (
	"errors"
	"net"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRelayFloor asks how far below the proxy's CPU per request any relay that
// reads each chunk and writes it on could go. In alternating rounds of one process, with
// 64 connections busy at once (the gate's cpu_proxied_over_direct_64 load), it measures
// the process's CPU per request sent straight to the server and through:
//
//	kalab     the proxy at 1 ms RTT, as the gate measures it
//	copy      two goroutines per connection running io.Copy, no delay
//	epoll     one locked OS thread over an epoll set of every socket, level-triggered,
//	          one read and one write per ready socket, no delay, no timers: the design a
//	          C relay would use, and a floor for any relay that adds a delay on top
//
// and reports each as a ratio to the direct CPU per request, the median of the rounds.
//
// Run it with: go test -run '^$' -bench RelayFloor -benchtime 1x ./engine/netsim
func BenchmarkRelayFloor(b *testing.B) {
	const rounds, inFlight = 7, 64
	addr, _ := httpServer(b, false)
	n := 1920 / inFlight
	var kalab, cp, ep, directUS []float64
	perReq := func(target string) float64 {
		before := cpuTime(b)
		got := rawLoad(b, target, inFlight, n)
		return float64(cpuTime(b)-before) / float64(len(got)) / 1e3
	}
	for range b.N {
		for range rounds {
			d := perReq(addr)
			p, err := Start(Config{Upstream: addr, RTT: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			k := perReq(p.Addr())
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			c := startCopyRelay(b, addr)
			cu := perReq(c.addr)
			c.close()
			e := startEpollRelay(b, addr)
			eu := perReq(e.addr)
			e.close()
			directUS = append(directUS, d)
			kalab = append(kalab, k/d)
			cp = append(cp, cu/d)
			ep = append(ep, eu/d)
		}
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(med(directUS), "direct-cpu-us/req")
	b.ReportMetric(med(kalab), "kalab-x-direct")
	b.ReportMetric(med(cp), "copy-x-direct")
	b.ReportMetric(med(ep), "epoll-x-direct")
}

// startEpollRelay relays every connection on one locked OS thread over an epoll set
// of raw non-blocking descriptors (duplicated out of Go's netpoller): each event is
// one read and the writes that hand its bytes on.
func startEpollRelay(tb testing.TB, upstream string) relay {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		tb.Fatal(err)
	}
	var stop [2]int
	if err := syscall.Pipe2(stop[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	watch := func(fd, peer int) error {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd), Pad: int32(peer)}
		return syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev)
	}
	if err := watch(stop[0], -1); err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var fds []int
	ln, acc := acceptPairs(tb, upstream, func(down, up *net.TCPConn) {
		d, u := rawFD(tb, down), rawFD(tb, up)
		mu.Lock()
		fds = append(fds, d, u)
		mu.Unlock()
		if watch(d, u) != nil || watch(u, d) != nil {
			tb.Error("epoll_ctl failed")
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		epollLoop(ep)
	}()
	return relay{addr: ln.Addr().String(), close: func() {
		ln.Close()
		acc.Wait()
		_, _ = syscall.Write(stop[1], []byte{0})
		<-done
		mu.Lock()
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
		mu.Unlock()
		for _, fd := range []int{ep, stop[0], stop[1]} {
			_ = syscall.Close(fd)
		}
	}}
}

// epollLoop serves the relay's events until the stop pipe (the event with no peer) is readable.
func epollLoop(ep int) {
	events := make([]syscall.EpollEvent, 128)
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.EpollWait(ep, events, -1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if ev.Pad < 0 {
				return
			}
			fd, peer := int(ev.Fd), int(ev.Pad)
			m, err := syscall.Read(fd, buf)
			if errors.Is(err, syscall.EAGAIN) {
				continue
			}
			if m <= 0 { // EOF or error: this direction is over, and the socket leaves the set
				_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, fd, nil)
				_ = syscall.Shutdown(peer, syscall.SHUT_WR)
				continue
			}
			writeAll(peer, buf[:m])
		}
	}
}

// writeAll writes p to a non-blocking socket, waiting out a full send buffer (the
// benchmark's requests and responses are small, so it does not happen there).
func writeAll(fd int, p []byte) {
	for len(p) > 0 {
		w, err := syscall.Write(fd, p)
		if errors.Is(err, syscall.EAGAIN) {
			time.Sleep(10 * time.Microsecond)
			continue
		}
		if err != nil {
			return
		}
		p = p[w:]
	}
}

// rawFD takes a duplicate of c's descriptor out of Go's netpoller, non-blocking, and
// closes c (the socket stays open through the duplicate).
func rawFD(tb testing.TB, c *net.TCPConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(s uintptr) { fd, dupErr = syscall.Dup(int(s)) }); err != nil || dupErr != nil {
		tb.Fatal(err, dupErr)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		tb.Fatal(err)
	}
	_ = c.Close()
	return fd
}
