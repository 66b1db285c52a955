//go:build linux

package netsim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// synRetries returns when the client's kernel retransmits an unanswered SYN, counted
// from the first: the initial RTO of 1 s, repeated tcp_syn_linear_timeouts times more
// (Linux 6.5+, commit ccce324dabfe "tcp: make the first N SYN RTO backoffs linear",
// default 4, macOS's schedule), then doubling: 1, 2, 3, 4, 5, 7, 11 s by default, 1, 3,
// 7 s on older kernels.
func synRetries(t *testing.T, n int) []time.Duration {
	linear := 0
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_syn_linear_timeouts"); err == nil {
		if _, err := fmt.Sscan(string(b), &linear); err != nil {
			t.Fatalf("tcp_syn_linear_timeouts: %v", err)
		}
	}
	var at time.Duration
	out := make([]time.Duration, 0, n)
	for i := range n {
		iv := time.Second
		if i > linear {
			iv <<= i - linear
		}
		at += iv
		out = append(out, at)
	}
	return out
}

// quickConnects gives no verdict when the connects that fill a test's listen queue took
// longer than limit: the queue then filled when the machine let it, not when the test
// planned, and what happens after is timed from the wrong instant.
func quickConnects(t *testing.T, what string, took, limit time.Duration) {
	t.Helper()
	if took > limit {
		testci.SkipOrFail(t, "machine too busy: %s took %v, over %v", what, took, limit)
	}
}

// TestBacklogDropsSYN fills a real listen queue of 1 (Linux holds 2) in front of a
// server that accepts once per accept_delay. The next connection's SYN is dropped and
// the client's kernel retries it on its schedule (synRetries); the first retry after
// the server's next accept gets in. A client whose connect timeout comes first gives up.
// This is a real-time test: its subject is the kernel's listen queue and SYN
// retransmission timer in front of the real relay, on this machine's clock. The virtual
// link's model of the same queue is judged exactly by TestVirtualListenQueueDropsSYN,
// TestVirtualListenQueueLateAccept and TestVirtualListenQueueConnectTimeout.
func TestBacklogDropsSYN(t *testing.T) {
	t.Parallel()
	retries := synRetries(t, 8)
	for _, tc := range []struct {
		accept time.Duration
		late   time.Duration // the kernel's retransmission timer runs late on this VM
	}{
		{700 * time.Millisecond, 50 * time.Millisecond},   // in at the first retry, 1 s
		{2500 * time.Millisecond, 150 * time.Millisecond}, // in at 3 s (1, 2, 3 or 1, 3)
	} {
		t.Run(tc.accept.String(), func(t *testing.T) {
			t.Parallel()
			var want time.Duration
			for _, r := range retries {
				if r > tc.accept {
					want = r
					break
				}
			}
			p, err := Start(Config{Upstream: tcpServer(t, echo), Backlog: 1, AcceptDelay: tc.accept})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			dial(t, p.Addr())
			waitFor(t, "the first accept", func() bool { return p.Stats().Accepted == 1 })
			start := time.Now()
			dial(t, p.Addr()) // queued
			dial(t, p.Addr()) // queued: the queue is full
			quickConnects(t, "two queued connects", time.Since(start), 200*time.Millisecond)
			type result struct {
				d   time.Duration
				err error
			}
			dialed := func(timeout time.Duration) chan result {
				ch := make(chan result, 1)
				go func() {
					s := time.Now()
					c, err := net.DialTimeout("tcp", p.Addr(), timeout)
					if err == nil {
						defer c.Close()
					}
					ch <- result{time.Since(s), err}
				}()
				return ch
			}
			giveUp := want - 300*time.Millisecond
			// The connect returns when the netpoller wakes the dialling goroutine, late by
			// as much as this process's goroutines wake late: measured beside it and added to
			// the upper bound (at load 4 it once returned 52 ms after the retry was due).
			probe := lag.StartProbe(time.Millisecond)
			retried, gaveUp := dialed(10*time.Second), dialed(giveUp)
			r := <-retried
			wake := probe.Stop()
			if r.err != nil {
				t.Fatalf("retried connect: %v", r.err)
			}
			within(t, "connect through a retried SYN", r.d, want-50*time.Millisecond, want+tc.late+wake.Max)
			t.Logf("connected at %v, SYN retry due at %v (schedule %v)", r.d, want, retries[:4])
			g := <-gaveUp
			var ne net.Error
			if g.err == nil || !errors.As(g.err, &ne) || !ne.Timeout() {
				t.Fatalf("connect with a %v timeout: %v after %v, want a timeout", giveUp, g.err, g.d)
			}
			within(t, "connect timeout", g.d, giveUp-50*time.Millisecond, giveUp+50*time.Millisecond)
		})
	}
}

// TestBacklogRefuses models tcp_abort_on_overflow=1: with a queue of 1 and a server
// that accepts once per second, the fourth connection finds two waiting and is reset
// one RTT after it connected; the second is served when the server accepts it.
// This is a real-time test of the real relay's fidelity to that model over real sockets,
// within bounds widened by the machine's lateness; the model itself is judged exactly
// on the virtual clock by TestVirtualListenQueueRefuse.
func TestBacklogRefuses(t *testing.T) {
	t.Parallel()
	rtt := 50 * time.Millisecond
	p, err := Start(Config{Upstream: tcpServer(t, echo), RTT: rtt, Backlog: 1, AcceptDelay: time.Second, RefuseOverflow: true,
		Lag: &lag.Recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The bounds below widen by the lateness this machine shows (withinTrips); the race
	// detector beside other packages' tests once made the reset 174 ms late of 50.
	probe := lag.StartProbe(time.Millisecond)
	probes.Store(p, probe)
	defer func() { probe.Stop(); probes.Delete(p) }()
	start := time.Now()
	conns := make([]*net.TCPConn, 4)
	for i := range conns {
		conns[i] = dial(t, p.Addr())
	}
	quickConnects(t, "four connects", time.Since(start), 50*time.Millisecond)
	for _, c := range conns {
		if _, err := c.Write([]byte{7}); err != nil {
			t.Fatal(err)
		}
	}
	_ = conns[3].SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = conns[3].Read(make([]byte, 1))
	refusedAt := time.Since(start)
	if !isConnReset(err) {
		t.Fatalf("overflowing connection read: %v, want ECONNRESET", err)
	}
	withinTrips(t, p, "reset of the overflowing connection", refusedAt, rtt-20*time.Millisecond, rtt+50*time.Millisecond, 2)
	// The second waits for the accept at 1 s, then its byte goes up and back: the
	// request is already past its floor, the echo takes half a trip.
	_ = conns[1].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(conns[1], make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	withinTrips(t, p, "echo on the queued connection", time.Since(start), time.Second+rtt/2-50*time.Millisecond, time.Second+rtt/2+50*time.Millisecond, 3)
	if n := p.Stats().Overflows; n != 1 {
		t.Errorf("Overflows = %d, want 1", n)
	}
}
