package netsim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/vnet"
)

// The virtual link's tests run in a synctest bubble, where time advances only when every
// goroutine waits, so each asserts the model's instants exactly.

// newVNet returns a network that is closed at cleanup, after the proxies (cleanups run
// last-registered first), which ends every server goroutine.
func newVNet(t *testing.T) *vnet.Network {
	n := vnet.New()
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// vServer serves handle on a fresh listener of n, one goroutine per connection.
func vServer(t *testing.T, n *vnet.Network, handle func(c *vnet.Conn)) string {
	t.Helper()
	ln, err := n.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c.(*vnet.Conn))
		}
	}()
	return ln.Addr().String()
}

// vEcho writes back what it reads until end of file, then closes.
func vEcho(c *vnet.Conn) {
	defer c.Close()
	_, _ = io.Copy(c, c)
}

// startVirtual starts a virtual link in n, closed at cleanup.
func startVirtual(t *testing.T, n *vnet.Network, cfg Config) *VirtualProxy {
	t.Helper()
	p, err := StartVirtual(cfg, n)
	if err != nil {
		t.Fatalf("StartVirtual: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// vDial connects to p as a client does: dial, then the simulated handshake from start.
func vDial(t *testing.T, n *vnet.Network, p *VirtualProxy, start time.Time) *vnet.Conn {
	t.Helper()
	c, err := n.Dial(t.Context(), p.Addr())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := p.Handshake(t.Context(), start, c.LocalAddr()); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return c
}

func exactly(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %v, want exactly %v", what, got, want)
	}
}

// readN reads exactly n bytes from c and fails the test otherwise.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

const vRTT = 100 * time.Millisecond

// TestVirtualRequestResponse: the handshake takes one RTT, the first client byte reaches
// the server 1.5 RTT after the connect and the answer reaches the client at 2 RTT; the
// same on an ordered network (vnet.Network.Order), whose order runs the link's items and
// the handshake's wait.
func TestVirtualRequestResponse(t *testing.T) {
	t.Run("own loop", func(t *testing.T) { requestResponse(t, false) })
	t.Run("ordered", func(t *testing.T) { requestResponse(t, true) })
}

func requestResponse(t *testing.T, ordered bool) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		if ordered {
			n.Order(synctest.Wait)
		}
		firstByte := make(chan time.Duration, 1)
		up := vServer(t, n, func(c *vnet.Conn) {
			defer c.Close()
			b := make([]byte, 256)
			k, err := c.Read(b)
			if err != nil {
				return
			}
			firstByte <- time.Since(start)
			_, _ = c.Write(b[:k])
			_, _ = io.Copy(c, c)
		})
		var rec recorder
		p := startVirtual(t, n, Config{Upstream: up, RTT: vRTT, OnConn: rec.add})
		c := vDial(t, n, p, start)
		exactly(t, "connect and handshake", time.Since(start), vRTT)
		req := []byte("GET / HTTP/1.1\r\nHost: kalab\r\n\r\n")
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, c, len(req)); !bytes.Equal(got, req) {
			t.Fatalf("answer %q, want %q", got, req)
		}
		exactly(t, "answer at the client", time.Since(start), 2*vRTT)
		exactly(t, "first byte at the upstream", <-firstByte, vRTT+vRTT/2)

		// A reused request costs one round trip.
		sent := time.Now()
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		readN(t, c, len(req))
		exactly(t, "reused request", time.Since(sent), vRTT)

		st := p.Stats()
		if st.Accepted != 1 || st.Open != 1 || st.PeakOpen != 1 || st.BytesUp != int64(2*len(req)) || st.BytesDown != int64(2*len(req)) {
			t.Errorf("stats %+v", st)
		}
		if !p.AcceptedFrom(c.LocalAddr().(*net.TCPAddr).Port) {
			t.Error("AcceptedFrom the client's port is false")
		}
		_ = p.Close()
		recs := rec.all()
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
		r := recs[0]
		if r.ClosedBy != SideKalab || r.Reason != ReasonRunEnd || r.BytesUp != int64(2*len(req)) || r.ID != 1 {
			t.Errorf("record %+v", r)
		}
		exactly(t, "record's idle time at the run's end", r.Idle, time.Since(sent)-vRTT/2)
		if st := p.Stats(); st.Open != 0 {
			t.Errorf("Open = %d after Close", st.Open)
		}
	})
}

// TestVirtualFINFollowsData: the server's FIN reaches the client RTT/2 after it was sent,
// behind the data sent before it, also data sent at the same instant.
func TestVirtualFINFollowsData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		sentFIN := make(chan time.Duration, 1)
		up := vServer(t, n, func(c *vnet.Conn) {
			defer c.Close()
			if _, err := c.Read(make([]byte, 16)); err != nil {
				return
			}
			_, _ = c.Write([]byte("abc"))
			time.Sleep(10 * time.Millisecond)
			_, _ = c.Write([]byte("def"))
			time.Sleep(10 * time.Millisecond)
			_, _ = c.Write([]byte("ghi"))
			_ = c.CloseWrite()
			sentFIN <- time.Since(start)
			_, _ = io.Copy(io.Discard, c)
		})
		p := startVirtual(t, n, Config{Upstream: up, RTT: vRTT})
		c := vDial(t, n, p, start)
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		for i, want := range []struct {
			data string
			at   time.Duration
		}{{"abc", 200 * time.Millisecond}, {"def", 210 * time.Millisecond}, {"ghi", 220 * time.Millisecond}} {
			got := readN(t, c, 3)
			if string(got) != want.data {
				t.Fatalf("chunk %d: %q, want %q", i, got, want.data)
			}
			exactly(t, "chunk "+want.data, time.Since(start), want.at)
		}
		if k, err := c.Read(make([]byte, 8)); k != 0 || err != io.EOF {
			t.Fatalf("after the data: %d bytes, %v; want EOF", k, err)
		}
		fin := <-sentFIN
		exactly(t, "FIN sent", fin, 170*time.Millisecond)
		exactly(t, "FIN at the client", time.Since(start), fin+vRTT/2)
	})
}

// TestVirtualFINAlone: a server that closes without writing anything sends a FIN with no
// data ahead of it, and the client reads EOF exactly RTT/2 after the close. A FIN behind
// data waits for that data whatever its own delay; this one has only its own.
func TestVirtualFINAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		closed := make(chan time.Duration, 1)
		up := vServer(t, n, func(c *vnet.Conn) {
			if _, err := c.Read(make([]byte, 1)); err != nil {
				return
			}
			closed <- time.Since(start)
			_ = c.Close()
		})
		p := startVirtual(t, n, Config{Upstream: up, RTT: vRTT})
		c := vDial(t, n, p, start)
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if k, err := c.Read(make([]byte, 8)); k != 0 || err != io.EOF {
			t.Fatalf("read %d bytes, %v; want EOF and no data", k, err)
		}
		at := <-closed
		exactly(t, "server's close", at, vRTT+vRTT/2)
		exactly(t, "EOF at the client", time.Since(start), at+vRTT/2)
	})
}

// TestVirtualStaleReset: the server closes after its answer; the client writes after the
// FIN arrived, and reads the reset exactly one RTT after its write (RTT/2 to the closed
// end, RTT/2 back). The record says the server closed first and the write was a failed
// attempt.
func TestVirtualStaleReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		up := vServer(t, n, func(c *vnet.Conn) {
			b := make([]byte, 256)
			k, err := c.Read(b)
			if err == nil {
				_, _ = c.Write(bytes.Repeat(b[:k], 10))
			}
			_ = c.Close()
		})
		var rec recorder
		p := startVirtual(t, n, Config{Upstream: up, RTT: vRTT, OnConn: rec.add})
		c := vDial(t, n, p, start)
		req := []byte("GET / HTTP/1.1\r\n\r\n")
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		readN(t, c, 10*len(req))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("after the answer: %v, want EOF", err)
		}
		exactly(t, "FIN at the client", time.Since(start), 2*vRTT)

		time.Sleep(time.Second)
		wrote := time.Now()
		if _, err := c.Write(req); err != nil {
			t.Fatalf("the stale write: %v", err)
		}
		time.Sleep(vRTT - time.Nanosecond)
		synctest.Wait()
		if _, _, reset := c.Pending(); reset {
			t.Fatal("the reset came before one RTT after the write")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read %v, want ECONNRESET", err)
		}
		exactly(t, "reset after the write", time.Since(wrote), vRTT)

		recs := rec.all()
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
		r := recs[0]
		if r.ClosedBy != SideServer || r.Reason != ReasonAfterResponse || !r.FailedAttempt {
			t.Errorf("record %+v: want closed by the server after its response, a failed attempt", r)
		}
		exactly(t, "record's close", r.Closed, vRTT+vRTT/2)
		exactly(t, "record's end", r.Ended, time.Since(start))
		if st := p.Stats(); st.ResetsDown != 1 || st.ResetsUp != 0 || st.Open != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestVirtualIdleCloseRecord: a server that closes 2 s after its last answer is recorded
// as an idle close after exactly 2 s.
func TestVirtualIdleCloseRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		up := vServer(t, n, func(c *vnet.Conn) {
			defer c.Close()
			b := make([]byte, 256)
			if _, err := c.Read(b); err != nil {
				return
			}
			_, _ = c.Write(bytes.Repeat([]byte("r"), 200))
			time.Sleep(2 * time.Second)
		})
		var rec recorder
		p := startVirtual(t, n, Config{Upstream: up, RTT: vRTT, OnConn: rec.add})
		c := vDial(t, n, p, start)
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		readN(t, c, 200)
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("%v, want EOF", err)
		}
		exactly(t, "FIN at the client", time.Since(start), 2*time.Second+2*vRTT)
		_ = c.Close()
		synctest.Wait() // the client's FIN is in flight
		time.Sleep(vRTT / 2)
		synctest.Wait()
		recs := rec.all()
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
		r := recs[0]
		if r.ClosedBy != SideServer || r.Reason != ReasonIdle || r.FailedAttempt {
			t.Errorf("record %+v: want an idle close by the server", r)
		}
		exactly(t, "idle", r.Idle, 2*time.Second)
		exactly(t, "closed", r.Closed, 2*time.Second+vRTT+vRTT/2)
		exactly(t, "ended", r.Ended, 2*time.Second+2*vRTT+vRTT/2)
		if st := p.Stats(); st.Open != 0 || st.ResetsDown != 0 || st.ResetsUp != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestVirtualRefusedUpstream: an upstream that refuses fails the client's connect one RTT
// after it started (Handshake: ECONNREFUSED), and becomes a reset at the client then (RTT/2
// after its SYN reached the server) for a client that does not wait for the handshake, and
// a refused record.
func TestVirtualRefusedUpstream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		var rec recorder
		p := startVirtual(t, n, Config{Upstream: "127.0.0.1:9", RTT: vRTT, OnConn: rec.add})
		c, err := n.Dial(t.Context(), p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(vRTT - time.Nanosecond)
		synctest.Wait()
		if _, _, reset := c.Pending(); reset {
			t.Fatal("the reset came before one RTT")
		}
		// The connect fails as a refused one does; a second connect from another port, made
		// with the same start, is not taken for it.
		if err := p.Handshake(t.Context(), start, c.LocalAddr()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("handshake %v, want ECONNREFUSED", err)
		}
		if err := p.Handshake(t.Context(), start, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}); err != nil {
			t.Fatalf("handshake of another port: %v", err)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read %v, want ECONNRESET", err)
		}
		exactly(t, "reset at the client", time.Since(start), vRTT)
		// A later connect from the same port is not an earlier one's refusal.
		if err := p.Handshake(t.Context(), time.Now().Add(-vRTT+time.Nanosecond), c.LocalAddr()); err != nil {
			t.Fatalf("handshake of a later connect from the same port: %v", err)
		}
		synctest.Wait()
		recs := rec.all()
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
		if r := recs[0]; r.ClosedBy != SideServer || r.Reason != ReasonRefused || r.Idle != -1 || r.Closed != 0 || r.FailedAttempt {
			t.Errorf("record %+v", r)
		}
		if st := p.Stats(); st.ResetsDown != 1 || st.Accepted != 1 || st.Open != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// jitterRun sends 60 numbered 8-byte chunks 3 ms apart through a link with jitter and
// returns each chunk's one-way delay in the order the server received them, failing if
// the order is not the sending order.
func jitterRun(t *testing.T, cfg Config) []time.Duration {
	var out []time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		const chunks, gap = 60, 3 * time.Millisecond
		first := start.Add(2 * vRTT) // past the handshake's floor
		var mu sync.Mutex
		arrived := make([]time.Duration, 0, chunks)
		up := vServer(t, n, func(c *vnet.Conn) {
			defer c.Close()
			var acc []byte
			b := make([]byte, 1024)
			for {
				k, err := c.Read(b)
				if err != nil {
					return
				}
				acc = append(acc, b[:k]...)
				mu.Lock()
				for ; len(acc) >= 8; acc = acc[8:] {
					i := int(binary.BigEndian.Uint64(acc))
					if i != len(arrived) {
						t.Errorf("chunk %d arrived as number %d: reordered", i, len(arrived))
					}
					arrived = append(arrived, time.Since(first.Add(time.Duration(i)*gap)))
				}
				mu.Unlock()
			}
		})
		cfg.Upstream = up
		p := startVirtual(t, n, cfg)
		c := vDial(t, n, p, start)
		for i := range chunks {
			time.Sleep(time.Until(first.Add(time.Duration(i) * gap)))
			if _, err := c.Write(binary.BigEndian.AppendUint64(nil, uint64(i))); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		mu.Lock()
		out = slices.Clone(arrived)
		mu.Unlock()
		if len(out) != chunks {
			t.Fatalf("%d chunks arrived, want %d", len(out), chunks)
		}
	})
	return out
}

// TestVirtualJitterSeeded: with a seed, two runs give the same delay to every chunk, the
// delays are the real link's draws from that seed (stage.Latency), no chunk overtakes the
// one before it, and another seed gives other delays.
func TestVirtualJitterSeeded(t *testing.T) {
	const jitter = 20 * time.Millisecond
	cfg := Config{RTT: vRTT, Jitter: jitter, Seed: 7, InitialWindow: -1}
	a, b := jitterRun(t, cfg), jitterRun(t, cfg)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different delays:\n%v\n%v", a, b)
	}
	// The expected delays: the seed's draws in order, each chunk held behind the one
	// before it (sent 3 ms earlier).
	ref := cfg.latency()
	var lastDue time.Duration
	clamped, spread := 0, map[time.Duration]bool{}
	for i, got := range a {
		sent := time.Duration(i) * 3 * time.Millisecond
		due := sent + ref.Next()
		if due < lastDue {
			due = lastDue
			clamped++
		}
		lastDue = due
		exactly(t, fmt.Sprintf("chunk %d's delay", i), got, due-sent)
		if got < vRTT/2 || got > vRTT/2+jitter {
			t.Errorf("chunk %d's delay %v outside [%v, %v]", i, got, vRTT/2, vRTT/2+jitter)
		}
		spread[got] = true
	}
	if clamped == 0 || len(spread) < 30 {
		t.Errorf("%d chunks held behind an earlier one, %d distinct delays: the jitter did not vary", clamped, len(spread))
	}
	cfg.Seed = 8
	if c := jitterRun(t, cfg); slices.Equal(a, c) {
		t.Error("different seeds gave the same delays")
	}
}

// vArrival is how many bytes reached an end at an instant (since the bubble's start).
type vArrival struct {
	at    time.Duration
	bytes int
}

// readArrivals reads size bytes from c and returns how many arrived at each instant.
func readArrivals(t *testing.T, c net.Conn, size int, start time.Time) []vArrival {
	t.Helper()
	var got []vArrival
	b := make([]byte, 64<<10)
	for total := 0; total < size; {
		k, err := c.Read(b[:min(len(b), size-total)])
		if err != nil {
			t.Fatal(err)
		}
		total += k
		at := time.Since(start)
		if len(got) > 0 && got[len(got)-1].at == at {
			got[len(got)-1].bytes += k
		} else {
			got = append(got, vArrival{at, k})
		}
	}
	return got
}

// slowStartRounds is the slow-start arithmetic written out: size bytes ready at leaves
// leave in rounds one RTT apart, the first of window bytes and each one twice the one
// before, and each round arrives RTT/2 after it left.
func slowStartRounds(leaves time.Duration, window, size int) []vArrival {
	var want []vArrival
	for left := size; left > 0; {
		k := min(left, window)
		want = append(want, vArrival{leaves + vRTT/2, k})
		left -= k
		window *= 2
		leaves += vRTT
	}
	return want
}

// bigServer answers each request (any read) with size bytes.
func bigServer(size int) func(c *vnet.Conn) {
	return func(c *vnet.Conn) {
		defer c.Close()
		b := make([]byte, 64)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			if _, err := c.Write(make([]byte, size)); err != nil {
				return
			}
		}
	}
}

// TestVirtualSlowStart: a 1 MiB answer at RTT 100 ms leaves the server in rounds of the
// initial window (10 segments of 1,448 bytes) doubling every round trip, and each round
// reaches the client RTT/2 after it left.
func TestVirtualSlowStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 1 << 20
		start := time.Now()
		n := newVNet(t)
		p := startVirtual(t, n, Config{Upstream: vServer(t, n, bigServer(size)), RTT: vRTT})
		c := vDial(t, n, p, start)
		if _, err := c.Write([]byte("GET /big HTTP/1.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		got := readArrivals(t, c, size, start)
		// The server answers when the request arrives, 1.5 RTT after the connect.
		want := slowStartRounds(vRTT+vRTT/2, 10*1448, size)
		if !slices.Equal(got, want) {
			t.Errorf("arrivals (at, bytes)\n got %v\nwant %v", got, want)
		}
		exactly(t, "the last byte", got[len(got)-1].at, 8*vRTT)
	})
}

// TestVirtualSlowStartRestart: after a 1 MiB answer the window is 64 initial windows;
// a second answer that leaves 1 s after the first one's last round starts from that
// window halved once per RTO (300 ms at 100 ms RTT) past the first, 3 times, or, with
// NoSlowStartAfterIdle, from the whole window.
func TestVirtualSlowStartRestart(t *testing.T) {
	const size, iw = 1 << 20, 10 * 1448
	for _, tc := range []struct {
		name   string
		keep   bool
		window int
	}{{"restart", false, 64 * iw / 8}, {"no restart", true, 64 * iw}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				n := newVNet(t)
				p := startVirtual(t, n, Config{Upstream: vServer(t, n, bigServer(size)), RTT: vRTT,
					NoSlowStartAfterIdle: tc.keep})
				c := vDial(t, n, p, start)
				if _, err := c.Write([]byte("GET /1")); err != nil {
					t.Fatal(err)
				}
				first := readArrivals(t, c, size, start)
				lastLeft := first[len(first)-1].at - vRTT/2 // 750 ms
				time.Sleep(time.Until(start.Add(lastLeft + time.Second - vRTT/2)))
				if _, err := c.Write([]byte("GET /2")); err != nil {
					t.Fatal(err)
				}
				got := readArrivals(t, c, size, start)
				want := slowStartRounds(lastLeft+time.Second, tc.window, size)
				if !slices.Equal(got, want) {
					t.Errorf("second answer's arrivals\n got %v\nwant %v", got, want)
				}
			})
		})
	}
}

// TestVirtualResets: a reset from either end reaches the other RTT/2 later, and the
// record says who reset.
func TestVirtualResets(t *testing.T) {
	for _, by := range []Side{SideServer, SideClient} {
		t.Run(string(by), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				n := newVNet(t)
				serverErr := make(chan error, 1)
				var rec recorder
				p := startVirtual(t, n, Config{Upstream: vServer(t, n, func(c *vnet.Conn) {
					b := make([]byte, 64)
					k, err := c.Read(b)
					if err == nil {
						_, _ = c.Write(b[:k])
					}
					if by == SideServer {
						time.Sleep(time.Second)
						_ = c.Abort()
						return
					}
					_, err = c.Read(b)
					serverErr <- err
				}), RTT: vRTT, OnConn: rec.add})
				c := vDial(t, n, p, start)
				if _, err := c.Write([]byte("ping")); err != nil {
					t.Fatal(err)
				}
				readN(t, c, 4)
				var err error
				var at time.Time // when the reset left
				if by == SideServer {
					at = start.Add(vRTT + vRTT/2 + time.Second)
					_, err = c.Read(make([]byte, 1))
				} else {
					time.Sleep(time.Second)
					at = time.Now()
					_ = c.Abort()
					err = <-serverErr
				}
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("the other end read %v, want ECONNRESET", err)
				}
				exactly(t, "reset's trip", time.Since(at), vRTT/2)
				synctest.Wait()
				recs := rec.all()
				if len(recs) != 1 {
					t.Fatalf("%d records, want 1", len(recs))
				}
				if r := recs[0]; r.ClosedBy != by || r.Reason != ReasonReset || r.Closed != at.Sub(start) {
					t.Errorf("record %+v", r)
				}
				st := p.Stats()
				if by == SideServer && (st.ResetsDown != 1 || st.ResetsUp != 0) || by == SideClient && (st.ResetsUp != 1 || st.ResetsDown != 0) || st.Open != 0 {
					t.Errorf("stats %+v", st)
				}
			})
		})
	}
}

// TestVirtualBandwidth: at 1 Mbit/s, 125,000 bytes take exactly 1 s to leave and arrive
// RTT/2 after the last one left.
func TestVirtualBandwidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 125000
		start := time.Now()
		n := newVNet(t)
		sent := make(chan time.Time, 1)
		up := vServer(t, n, func(c *vnet.Conn) {
			defer c.Close()
			if _, err := c.Read(make([]byte, 64)); err != nil {
				return
			}
			sent <- time.Now()
			_, _ = c.Write(make([]byte, size))
			_, _ = io.Copy(io.Discard, c)
		})
		p := startVirtual(t, n, Config{Upstream: up, RTT: vRTT, Bandwidth: 1_000_000, InitialWindow: -1})
		c := vDial(t, n, p, start)
		if _, err := c.Write([]byte("GET /")); err != nil {
			t.Fatal(err)
		}
		readN(t, c, size)
		at := <-sent
		// The 5-byte request itself took 40 µs to serialize.
		exactly(t, "the request's arrival", at.Sub(start), vRTT+vRTT/2+40*time.Microsecond)
		exactly(t, "the answer's last byte", time.Since(at), time.Second+vRTT/2)
		if st := p.Stats(); st.BytesDown != size {
			t.Errorf("BytesDown %d, want %d", st.BytesDown, size)
		}
	})
}

// vRoundTrip writes one byte to c and reads the echo, returning when the echo arrived
// (since start).
func vRoundTrip(t *testing.T, c net.Conn, start time.Time) time.Duration {
	t.Helper()
	if _, err := c.Write([]byte("q")); err != nil {
		t.Fatalf("write: %v", err)
	}
	readN(t, c, 1)
	return time.Since(start)
}

// TestVirtualListenQueueRefuse: with RefuseOverflow the modelled server accepts one
// connection per AcceptDelay; a connection that finds Backlog+1 waiting is reset one
// RTT after its connect, and the others are served when their turn comes, their bytes
// waiting at the server meanwhile.
func TestVirtualListenQueueRefuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		p := startVirtual(t, n, Config{Upstream: vServer(t, n, vEcho), RTT: vRTT,
			Backlog: 1, AcceptDelay: time.Second, RefuseOverflow: true})
		conns := make([]*vnet.Conn, 4)
		for i := range conns {
			c, err := n.Dial(t.Context(), p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		if err := p.Handshake(t.Context(), start, conns[0].LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if _, err := conns[3].Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("the fourth connection read %v, want ECONNRESET", err)
		}
		exactly(t, "the overflow's reset", time.Since(start), vRTT)
		var wg sync.WaitGroup
		got := make([]time.Duration, 3)
		for i := range got {
			wg.Go(func() { got[i] = vRoundTrip(t, conns[i], start) })
		}
		wg.Wait()
		// Accepted at 0, 1 s and 2 s; the requests sent at 100 ms reached the server
		// then (no sooner than 150 ms) and their answers came back RTT/2 later.
		want := []time.Duration{2 * vRTT, time.Second + vRTT/2, 2*time.Second + vRTT/2}
		if !slices.Equal(got, want) {
			t.Errorf("answers at %v, want %v", got, want)
		}
		if st := p.Stats(); st.Accepted != 4 || st.Overflows != 1 || st.ResetsDown != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestVirtualListenQueueDropsSYN: with the default overflow the queue drops the SYN of a
// connection that finds Backlog+1 waiting, and DialContext sends it again at the client
// kernel's retry times: a server that accepts every 700 ms lets the fourth connection in
// at the first retry, 1 s after its first SYN, and accepts it at 2.1 s.
func TestVirtualListenQueueDropsSYN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		p := startVirtual(t, n, Config{Upstream: vServer(t, n, vEcho), RTT: vRTT,
			Backlog: 1, AcceptDelay: 700 * time.Millisecond})
		// Four clients connect at 0, one after another, and each sends a request once
		// connected.
		conns := make([]net.Conn, 4)
		connected, got := make([]time.Duration, 4), make([]time.Duration, 4)
		var wg sync.WaitGroup
		for i := range conns {
			wg.Go(func() {
				c, err := p.DialContext(t.Context(), "tcp", p.Addr())
				if err != nil {
					t.Error(err)
					return
				}
				if err := p.Handshake(t.Context(), start, c.LocalAddr()); err != nil {
					t.Error(err)
					return
				}
				conns[i], connected[i] = c, time.Since(start)
				got[i] = vRoundTrip(t, c, start)
			})
			synctest.Wait() // connected, or its SYN dropped
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if st := p.Stats(); st.Accepted != 2 {
			t.Errorf("%d accepted at 1 s, want 2 (at 0 and 700 ms)", st.Accepted)
		}
		wg.Wait()
		if want := []time.Duration{vRTT, vRTT, vRTT, time.Second}; !slices.Equal(connected, want) {
			t.Errorf("connected at %v, want %v", connected, want)
		}
		// A link starts when the modelled server accepts it, and its first answer comes
		// 2 RTT later: accepted at 0, 0.7 s, 1.4 s and 2.1 s.
		want := []time.Duration{2 * vRTT, 700*time.Millisecond + 2*vRTT, 1400*time.Millisecond + 2*vRTT, 2100*time.Millisecond + 2*vRTT}
		if !slices.Equal(got, want) {
			t.Errorf("answers at %v, want %v", got, want)
		}
		for i, c := range conns {
			if !p.AcceptedFrom(c.LocalAddr().(*net.TCPAddr).Port) {
				t.Errorf("connection %d not accepted", i)
			}
		}
		if st := p.Stats(); st.Accepted != 4 || st.Overflows != 0 || st.ResetsDown != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestVirtualListenQueueLateAccept is TestBacklogDropsSYN's second plan on the virtual
// link, exact: a server that accepts every 2.5 s, its queue of 1 holding two, drops the
// SYNs of two more connects at 0 and again at the first retry, 1 s. The one with no
// deadline of its own gets in at the next retry, 3 s, the first after the accept at
// 2.5 s; the one whose connect timeout of 2.7 s comes first gives up at exactly 2.7 s.
func TestVirtualListenQueueLateAccept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		p := startVirtual(t, n, Config{Upstream: vServer(t, n, vEcho), RTT: vRTT,
			Backlog: 1, AcceptDelay: 2500 * time.Millisecond})
		for range 3 { // accepted at 0, then two queued: the queue is full
			c, err := p.DialContext(t.Context(), "tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("three connects took %v, want none", d)
		}
		type result struct {
			at  time.Duration
			err error
		}
		dialed := func(timeout time.Duration) chan result {
			ch := make(chan result, 1)
			go func() {
				ctx := t.Context()
				if timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				c, err := p.DialContext(ctx, "tcp", p.Addr())
				if err == nil {
					defer c.Close()
				}
				ch <- result{time.Since(start), err}
			}()
			return ch
		}
		retried, gaveUp := dialed(0), dialed(2700*time.Millisecond)
		g := <-gaveUp
		var ne net.Error
		if g.err == nil || !errors.As(g.err, &ne) || !ne.Timeout() {
			t.Fatalf("connect with a 2.7s timeout: %v at %v, want a timeout", g.err, g.at)
		}
		exactly(t, "connect timeout", g.at, 2700*time.Millisecond)
		r := <-retried
		if r.err != nil {
			t.Fatalf("retried connect: %v", r.err)
		}
		exactly(t, "connect through the SYN retried at 3 s", r.at, 3*time.Second)
		if st := p.Stats(); st.Accepted != 2 || st.Overflows != 0 {
			t.Errorf("stats at 3 s %+v, want 2 accepted (at 0 and 2.5 s)", st)
		}
	})
}

// TestVirtualListenQueueConnectTimeout: a SYN that never finds room is sent at 0, 1, 3,
// 7, 15, 31 and 63 s, and the connect fails with ETIMEDOUT at 127 s.
func TestVirtualListenQueueConnectTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		p := startVirtual(t, n, Config{Upstream: vServer(t, n, vEcho), RTT: vRTT,
			Backlog: 1, AcceptDelay: time.Hour})
		for range 3 {
			c, err := p.DialContext(t.Context(), "tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		_, err := p.DialContext(t.Context(), "tcp", p.Addr())
		if !errors.Is(err, syscall.ETIMEDOUT) {
			t.Fatalf("the fourth connect: %v, want ETIMEDOUT", err)
		}
		exactly(t, "connect timeout", time.Since(start), 127*time.Second)
	})
}

// TestVirtualEventLoopSameInstant: items due at the same instant are performed in the
// order they were pushed, whichever goroutine pushed them, over 100 repetitions.
func TestVirtualEventLoopSameInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEventLoop(nil, func(ev *vevent) { ev.call() })
		var got []int
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.run()
		}()
		push := func(due time.Time, id int) {
			e.push(vevent{due: due, call: func() { got = append(got, id) }})
		}
		var want []int
		for r := range 100 {
			due := time.Now().Add(time.Millisecond)
			// A later item pushed first, then three at one instant from two goroutines
			// in turn, then an earlier one.
			push(due.Add(time.Microsecond), 5*r+4)
			push(due, 5*r+1)
			pushed := make(chan struct{})
			go func() {
				push(due, 5*r+2)
				close(pushed)
			}()
			<-pushed
			push(due, 5*r+3)
			push(due.Add(-time.Microsecond), 5*r)
			want = append(want, 5*r, 5*r+1, 5*r+2, 5*r+3, 5*r+4)
			time.Sleep(2 * time.Millisecond)
		}
		synctest.Wait()
		e.close()
		<-done
		if !slices.Equal(got, want) {
			t.Errorf("performed %v,\nwant %v", got, want)
		}
	})
}

// TestVirtualSameInstantAcrossLinks: chunks of two links due at the same instant reach
// their server in the order the link pushed them, 100 times. The seeded jitter makes the
// second chunk, sent later with a shorter draw, due at the same instant as the first.
func TestVirtualSameInstantAcrossLinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newVNet(t)
		cfg := Config{RTT: vRTT, Jitter: 20 * time.Millisecond, Seed: 11, InitialWindow: -1}
		var mu sync.Mutex
		var servers []*vnet.Conn
		cfg.Upstream = vServer(t, n, func(c *vnet.Conn) {
			mu.Lock()
			servers = append(servers, c)
			mu.Unlock()
		})
		p := startVirtual(t, n, cfg)
		clients := []*vnet.Conn{vDial(t, n, p, start)}
		synctest.Wait()
		clients = append(clients, vDial(t, n, p, start))
		synctest.Wait()
		mu.Lock()
		if len(servers) != 2 {
			t.Fatalf("%d upstream connections, want 2", len(servers))
		}
		mu.Unlock()
		// The first delivery to either server in a round: which one, and whether the
		// other had data already.
		first, both := -1, false
		n.SetOnEvent(func() {
			b0, b1 := servers[0].Buffered(), servers[1].Buffered()
			mu.Lock()
			defer mu.Unlock()
			if first >= 0 || b0+b1 == 0 {
				return
			}
			switch {
			case b0 > 0 && b1 > 0:
				both = true
			case b0 > 0:
				first = 0
			default:
				first = 1
			}
		})
		defer n.SetOnEvent(nil)
		ref := cfg.latency()
		at := start.Add(time.Second)
		same := 0
		for r := 0; same < 100; r++ {
			if r > 1000 {
				t.Fatalf("only %d rounds of 1000 had the second draw shorter", same)
			}
			a, b := ref.Next(), ref.Next() // the draws of this round's two pushes
			lead := r % 2                  // the link that pushes first
			gap := a - b                   // the second push is due with the first
			if gap <= 0 {
				gap = time.Millisecond // not due together: sent 1 ms apart, checked for nothing
			}
			time.Sleep(time.Until(at))
			if _, err := clients[lead].Write([]byte{byte(r)}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(gap)
			if _, err := clients[1-lead].Write([]byte{byte(r)}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(at.Add(a)))
			synctest.Wait()
			mu.Lock()
			f, bo := first, both
			first, both = -1, false
			mu.Unlock()
			if a > b {
				same++
				if bo || f != lead {
					t.Fatalf("round %d: first delivery to link %d (both at once: %v), want link %d, pushed first", r, f, bo, lead)
				}
			}
			time.Sleep(time.Until(at.Add(max(a, gap+b))))
			synctest.Wait()
			for _, s := range servers {
				if k, _ := s.Read(make([]byte, 8)); k != 1 {
					t.Fatalf("round %d: server read %d bytes, want 1", r, k)
				}
			}
			mu.Lock()
			first, both = -1, false
			mu.Unlock()
			at = at.Add(200 * time.Millisecond)
		}
	})
}

// vRequests sends reqs sequential request/response exchanges of an HTTP-like size over
// one connection through a virtual link of the given RTT and returns the virtual time
// they took.
func vRequests(t *testing.T, reqs int, rtt time.Duration) time.Duration {
	var took time.Duration
	synctest.Test(t, func(t *testing.T) {
		n := newVNet(t)
		resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 11\r\nKeep-Alive: timeout=5\r\n\r\nhello world")
		req := []byte("GET / HTTP/1.1\r\nHost: kalab\r\nUser-Agent: kalab\r\n\r\n")
		up := vServer(t, n, func(c *vnet.Conn) {
			defer c.Close()
			b := make([]byte, len(req))
			for {
				if _, err := io.ReadFull(c, b); err != nil {
					return
				}
				if _, err := c.Write(resp); err != nil {
					return
				}
			}
		})
		p := startVirtual(t, n, Config{Upstream: up, RTT: rtt})
		start := time.Now()
		c := vDial(t, n, p, start)
		b := make([]byte, len(resp))
		for range reqs {
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, b); err != nil {
				t.Fatal(err)
			}
		}
		took = time.Since(start)
		_ = c.Close()
	})
	return took
}

// TestVirtualThousandRequests: 1,000 requests at 100 ms take the handshake's RTT and one
// RTT each (the first one's floors hold it no longer), exactly, and little real time.
func TestVirtualThousandRequests(t *testing.T) {
	t0 := time.Now()
	took := vRequests(t, 1000, vRTT)
	exactly(t, "virtual time", took, vRTT+1000*vRTT)
	t.Logf("1,000 requests: %v of virtual time in %v", took, time.Since(t0))
}

// TestVirtualSameInstantArriveTogether: two writes a server makes at one instant reach
// the client as one arrival, however the server's and the link reader's goroutines took
// turns between them (here the server yields after the first, so the reader takes it
// alone): on an ordered network the client's first read holds both, at exactly 2 RTT.
// Delivered apart, the client would act on the first before the second landed, and
// which of the two it saw would be Go's scheduler's choice.
func TestVirtualSameInstantArriveTogether(t *testing.T) {
	for _, yield := range []bool{false, true} {
		t.Run(fmt.Sprintf("server yields %v", yield), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				n := newVNet(t)
				n.Order(synctest.Wait)
				up := vServer(t, n, func(c *vnet.Conn) {
					defer c.Close()
					if _, err := c.Read(make([]byte, 16)); err != nil {
						return
					}
					_, _ = c.Write([]byte("response"))
					for i := 0; yield && i < 20; i++ {
						runtime.Gosched() // the link's reader reads "response" alone
					}
					_, _ = c.Write([]byte("+alert"))
					_, _ = io.Copy(io.Discard, c)
				})
				p := startVirtual(t, n, Config{Upstream: up, RTT: vRTT})
				c := vDial(t, n, p, start)
				if _, err := c.Write([]byte("x")); err != nil {
					t.Fatal(err)
				}
				b := make([]byte, 64)
				k, err := c.Read(b)
				if err != nil {
					t.Fatal(err)
				}
				if string(b[:k]) != "response+alert" {
					t.Errorf("first read %q, want both writes of the instant: %q", b[:k], "response+alert")
				}
				exactly(t, "arrival", time.Since(start), 2*vRTT)
			})
		})
	}
}
