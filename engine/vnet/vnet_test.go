package vnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// connect listens on a fresh port, dials it and accepts.
func connect(t *testing.T, n *Network) (cl, sv *Conn) {
	t.Helper()
	l, err := n.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	cl, err = n.Dial(t.Context(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return cl, c.(*Conn)
}

func mustWrite(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func mustRead(t *testing.T, c net.Conn, size int, want string) {
	t.Helper()
	b := make([]byte, size)
	n, err := c.Read(b)
	if err != nil || string(b[:n]) != want {
		t.Fatalf("Read = %q, %v; want %q", b[:n], err, want)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
	if target == io.EOF {
		if err != io.EOF {
			t.Fatalf("%s: error %#v, want a bare io.EOF", what, err)
		}
		return
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Net != "tcp" {
		t.Fatalf("%s: error %#v is not a tcp *net.OpError", what, err)
	}
}

func wantStats(t *testing.T, n *Network, want Stats) {
	t.Helper()
	if got := n.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestWriteRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		if got := cl.LocalAddr().String(); got != "127.0.0.1:40000" {
			t.Errorf("client LocalAddr = %s", got)
		}
		if got := cl.RemoteAddr().String(); got != "127.0.0.1:10000" {
			t.Errorf("client RemoteAddr = %s", got)
		}
		if got := sv.RemoteAddr().(*net.TCPAddr).Port; got != 40000 {
			t.Errorf("server RemoteAddr port = %d", got)
		}
		if got := sv.LocalAddr().String(); got != "127.0.0.1:10000" {
			t.Errorf("server LocalAddr = %s", got)
		}
		mustWrite(t, cl, "hello")
		mustWrite(t, cl, " world")
		if got := sv.Buffered(); got != 11 {
			t.Fatalf("Buffered = %d", got)
		}
		mustRead(t, sv, 3, "hel")
		mustRead(t, sv, 4, "lo w")
		mustRead(t, sv, 100, "orld")
		if got := sv.Buffered(); got != 0 {
			t.Fatalf("Buffered = %d", got)
		}
		if n, err := sv.Read(nil); n != 0 || err != nil {
			t.Fatalf("Read(nil) = %d, %v", n, err)
		}
		// A blocked Read returns what a later Write delivers.
		go func() {
			time.Sleep(time.Second)
			mustWrite(t, sv, "late")
		}()
		start := time.Now()
		mustRead(t, cl, 10, "late")
		if d := time.Since(start); d != time.Second {
			t.Fatalf("Read returned after %v", d)
		}
		wantStats(t, n, Stats{Dials: 1, Accepted: 1, Open: 1})
	})
}

func TestConcurrentWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		const writers, records = 8, 500
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range records {
					mustWrite(t, cl, fmt.Sprintf("%d:%d;", w, i))
				}
			})
		}
		go func() {
			wg.Wait()
			cl.CloseWrite()
		}()
		var all bytes.Buffer
		b := make([]byte, 7)
		for {
			k, err := sv.Read(b)
			all.Write(b[:k])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		next := make([]int, writers)
		recs := strings.Split(strings.TrimSuffix(all.String(), ";"), ";")
		if len(recs) != writers*records {
			t.Fatalf("%d records, want %d", len(recs), writers*records)
		}
		for _, r := range recs {
			var w, i int
			if _, err := fmt.Sscanf(r, "%d:%d", &w, &i); err != nil {
				t.Fatalf("record %q: %v", r, err)
			}
			if i != next[w] {
				t.Fatalf("writer %d: record %d, want %d", w, i, next[w])
			}
			next[w]++
		}
	})
}

func TestFINAfterData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		mustWrite(t, cl, "data")
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
		if data, eof, reset := sv.Pending(); !data || !eof || reset {
			t.Fatalf("Pending = %v %v %v", data, eof, reset)
		}
		mustRead(t, sv, 10, "data")
		_, err := sv.Read(make([]byte, 10))
		wantErr(t, "first read after FIN", err, io.EOF)
		_, err = sv.Read(make([]byte, 10))
		wantErr(t, "second read after FIN", err, io.EOF)
		_, err = cl.Read(make([]byte, 1))
		wantErr(t, "read on closed end", err, net.ErrClosed)
		_, err = cl.Write([]byte("x"))
		wantErr(t, "write on closed end", err, net.ErrClosed)
		wantErr(t, "second Close", cl.Close(), net.ErrClosed)
		wantStats(t, n, Stats{Dials: 1, Accepted: 1, Open: 1, ActiveCloses: 1, ActiveClosesDial: 1})
		if err := sv.Close(); err != nil {
			t.Fatal(err)
		}
		wantStats(t, n, Stats{Dials: 1, Accepted: 1, Open: 0, ActiveCloses: 1, ActiveClosesDial: 1})
	})
}

func TestHalfClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		mustWrite(t, cl, "request")
		if err := cl.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if err := cl.CloseWrite(); err != nil {
			t.Fatalf("second CloseWrite: %v", err)
		}
		_, err := cl.Write([]byte("x"))
		wantErr(t, "write after CloseWrite", err, syscall.EPIPE)
		mustRead(t, sv, 100, "request")
		_, err = sv.Read(make([]byte, 10))
		wantErr(t, "read after FIN", err, io.EOF)
		mustWrite(t, sv, "response")
		mustWrite(t, sv, " more")
		mustRead(t, cl, 100, "response more")
		if err := sv.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = cl.Read(make([]byte, 10))
		wantErr(t, "client read after server close", err, io.EOF)
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
		wantStats(t, n, Stats{Dials: 1, Accepted: 1, ActiveCloses: 1, ActiveClosesDial: 1})
	})
}

func TestServerActiveClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		sv.Close()
		_, err := cl.Read(make([]byte, 1))
		wantErr(t, "read", err, io.EOF)
		cl.Close()
		wantStats(t, n, Stats{Dials: 1, Accepted: 1, ActiveCloses: 1, ActiveClosesAccept: 1})
	})
}

func TestCloseWithUnreadDataResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		mustWrite(t, sv, "to the client, kept unread by nobody")
		mustWrite(t, cl, "unread")
		if err := sv.Close(); err != nil {
			t.Fatal(err)
		}
		if data, eof, reset := cl.Pending(); data || eof || !reset {
			t.Fatalf("Pending = %v %v %v, want reset only", data, eof, reset)
		}
		if got := cl.Buffered(); got != 0 {
			t.Fatalf("Buffered after reset = %d", got)
		}
		for i := range 2 {
			_, err := cl.Read(make([]byte, 100))
			wantErr(t, fmt.Sprintf("read %d", i), err, syscall.ECONNRESET)
		}
		// The reads reported the reset: writes now fail with EPIPE.
		_, err := cl.Write([]byte("x"))
		wantErr(t, "write after reported reset", err, syscall.EPIPE)
		cl.Close()
		wantStats(t, n, Stats{Dials: 1, Accepted: 1})
	})
}

func TestWriteToClosedPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		sv.Close()
		// The FIN is there; a write still succeeds, and the reset comes back.
		mustWrite(t, cl, "request on a closed connection")
		if data, eof, reset := cl.Pending(); data || !eof || !reset {
			t.Fatalf("Pending = %v %v %v", data, eof, reset)
		}
		_, err := cl.Read(make([]byte, 10))
		wantErr(t, "read", err, syscall.ECONNRESET)
		if s := err.Error(); s != "read tcp 127.0.0.1:40000->127.0.0.1:10000: read: connection reset by peer" {
			t.Errorf("error text %q", s)
		}

		cl2, sv2 := connect(t, n)
		sv2.Close()
		mustWrite(t, cl2, "x")
		_, err = cl2.Write([]byte("y"))
		wantErr(t, "first write after reset", err, syscall.ECONNRESET)
		_, err = cl2.Write([]byte("y"))
		wantErr(t, "second write after reset", err, syscall.EPIPE)
		_, err = cl2.Read(make([]byte, 10))
		wantErr(t, "read", err, syscall.ECONNRESET)
	})
}

func TestAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		mustWrite(t, cl, "discarded")
		done := make(chan error)
		go func() {
			_, err := cl.Read(make([]byte, 10))
			done <- err
		}()
		synctest.Wait()
		if err := cl.Abort(); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "own blocked read", <-done, net.ErrClosed)
		if !sv.Readable() {
			t.Fatal("reset end not Readable")
		}
		_, err := sv.Read(make([]byte, 10))
		wantErr(t, "peer read", err, syscall.ECONNRESET)
		wantErr(t, "Abort again", cl.Abort(), net.ErrClosed)
		sv.Close()
		wantStats(t, n, Stats{Dials: 1, Accepted: 1})

		// SetLinger(0) makes Close reset too.
		cl, sv = connect(t, n)
		cl.SetLinger(0)
		cl.Close()
		_, err = sv.Read(make([]byte, 10))
		wantErr(t, "read after linger-0 close", err, syscall.ECONNRESET)
	})
}

func TestRefusedAndPorts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		_, err := n.Dial(t.Context(), "127.0.0.1:8080")
		wantErr(t, "dial unbound", err, syscall.ECONNREFUSED)
		var oe *net.OpError
		if errors.As(err, &oe); oe.Op != "dial" || oe.Addr.String() != "127.0.0.1:8080" {
			t.Fatalf("OpError = %+v", oe)
		}
		l1, err := n.Listen("127.0.0.1:8080")
		if err != nil {
			t.Fatal(err)
		}
		_, err = n.Listen("127.0.0.1:8080")
		wantErr(t, "listen twice", err, syscall.EADDRINUSE)
		l2, _ := n.Listen("127.0.0.1:0")
		l3, _ := n.Listen("")
		if a, b := l2.Addr().String(), l3.Addr().String(); a != "127.0.0.1:10000" || b != "127.0.0.1:10001" {
			t.Fatalf("listener addrs %s %s", a, b)
		}
		if _, ok := l1.Addr().(*net.TCPAddr); !ok {
			t.Fatal("Addr is not a *net.TCPAddr")
		}
		for i := range 3 {
			c, err := n.DialContext(t.Context(), "tcp", "localhost:8080")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := c.LocalAddr().String(), fmt.Sprintf("127.0.0.1:%d", 40000+i); got != want {
				t.Fatalf("dial %d: local %s, want %s", i, got, want)
			}
		}
		if got := l1.QueueLen(); got != 3 {
			t.Fatalf("QueueLen = %d", got)
		}
		if _, err := n.DialContext(t.Context(), "udp", "127.0.0.1:8080"); err == nil {
			t.Fatal("udp dial succeeded")
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = n.Dial(ctx, "127.0.0.1:8080")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("dial with canceled ctx: %v", err)
		}
		l1.Close()
		_, err = n.Dial(t.Context(), "127.0.0.1:8080")
		wantErr(t, "dial closed listener", err, syscall.ECONNREFUSED)
		// The port is free again.
		l4, err := n.Listen("127.0.0.1:8080")
		if err != nil {
			t.Fatal(err)
		}
		l4.Close()
		wantStats(t, n, Stats{Dials: 3, Refused: 2, Open: 3}) // the reset dialing ends are not closed
	})
}

func TestListenerCloseResetsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		l, _ := n.Listen("")
		cl, err := n.Dial(t.Context(), l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			_, err := l.Accept()
			for err == nil {
				_, err = l.Accept()
			}
			done <- err
		}()
		synctest.Wait()
		// The queued connection was accepted by the goroutine above; queue another.
		cl2, _ := n.Dial(t.Context(), l.Addr().String())
		_ = cl2
		synctest.Wait()
		l.Close()
		wantErr(t, "accept after close", <-done, net.ErrClosed)
		_, err = l.Accept()
		wantErr(t, "accept after close", err, net.ErrClosed)
		wantErr(t, "close twice", l.Close(), net.ErrClosed)
		mustWrite(t, cl, "accepted conn still works")

		l2, _ := n.Listen("")
		cl3, _ := n.Dial(t.Context(), l2.Addr().String())
		l2.Close()
		_, err = cl3.Read(make([]byte, 1))
		wantErr(t, "read on conn reset by listener close", err, syscall.ECONNRESET)
	})
}

func TestReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, _ := connect(t, n)
		start := time.Now()
		const d = 1500 * time.Millisecond
		cl.SetReadDeadline(start.Add(d))
		_, err := cl.Read(make([]byte, 1))
		if got := time.Since(start); got != d {
			t.Fatalf("deadline fired after %v, want %v", got, d)
		}
		wantErr(t, "read", err, os.ErrDeadlineExceeded)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%v is not a timeout", err)
		}
		// Still expired.
		_, err = cl.Read(make([]byte, 1))
		wantErr(t, "read again", err, os.ErrDeadlineExceeded)
		// Cleared: a read waits for data again.
		cl.SetReadDeadline(time.Time{})
		cl.SetWriteDeadline(time.Now().Add(-time.Second))
		_, err = cl.Write([]byte("x"))
		wantErr(t, "write past deadline", err, os.ErrDeadlineExceeded)
		cl.SetWriteDeadline(time.Now().Add(time.Second))
		mustWrite(t, cl, "x")
	})
}

func TestDeadlineChangedWhileBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		type result struct {
			at  time.Duration
			n   int
			err error
		}
		start := time.Now()
		read := func() chan result {
			ch := make(chan result, 1)
			go func() {
				k, err := cl.Read(make([]byte, 10))
				ch <- result{time.Since(start), k, err}
			}()
			return ch
		}

		// Extended while blocked.
		cl.SetReadDeadline(start.Add(time.Second))
		ch := read()
		time.Sleep(500 * time.Millisecond)
		cl.SetReadDeadline(start.Add(2500 * time.Millisecond))
		r := <-ch
		if r.at != 2500*time.Millisecond || !errors.Is(r.err, os.ErrDeadlineExceeded) {
			t.Fatalf("extended deadline: %+v", r)
		}

		// Shortened while blocked.
		start = time.Now()
		cl.SetReadDeadline(start.Add(time.Hour))
		ch = read()
		time.Sleep(time.Second)
		cl.SetReadDeadline(start.Add(1500 * time.Millisecond))
		r = <-ch
		if r.at != 1500*time.Millisecond || !errors.Is(r.err, os.ErrDeadlineExceeded) {
			t.Fatalf("shortened deadline: %+v", r)
		}

		// Set in the past while blocked: the read returns at once.
		start = time.Now()
		cl.SetReadDeadline(time.Time{})
		ch = read()
		time.Sleep(time.Second)
		cl.SetReadDeadline(start)
		r = <-ch
		if r.at != time.Second || !errors.Is(r.err, os.ErrDeadlineExceeded) {
			t.Fatalf("past deadline: %+v", r)
		}

		// Cleared while blocked: the read waits for data.
		start = time.Now()
		cl.SetReadDeadline(start.Add(time.Second))
		ch = read()
		time.Sleep(500 * time.Millisecond)
		cl.SetReadDeadline(time.Time{})
		time.Sleep(4500 * time.Millisecond)
		mustWrite(t, sv, "data")
		r = <-ch
		if r.at != 5*time.Second || r.err != nil || r.n != 4 {
			t.Fatalf("cleared deadline: %+v", r)
		}
	})
}

func TestNetworkCloseUnblocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		cl, sv := connect(t, n)
		l, _ := n.Listen("")
		queued, _ := n.Dial(t.Context(), l.Addr().String())
		l2, _ := n.Listen("")
		errs := make(chan error, 5)
		for _, c := range []*Conn{cl, sv, queued} {
			go func() {
				_, err := c.Read(make([]byte, 1))
				errs <- err
			}()
		}
		go func() {
			_, err := l2.Accept()
			errs <- err
		}()
		go func() {
			_, err := l2.Accept()
			errs <- err
		}()
		synctest.Wait()
		wantStats(t, n, Stats{Dials: 2, Accepted: 1, Open: 2})
		n.Close()
		for range 5 {
			if err := <-errs; err == nil {
				t.Fatal("blocked call returned no error")
			}
		}
		wantStats(t, n, Stats{Dials: 2, Accepted: 1, Open: 0})
		if _, err := n.Listen(""); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Listen after Close: %v", err)
		}
		_, err := n.Dial(t.Context(), l.Addr().String())
		wantErr(t, "dial after Close", err, syscall.ECONNREFUSED)
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		if cl.Readable() || sv.Readable() {
			t.Fatal("idle conn Readable")
		}
		mustWrite(t, sv, "x")
		if !cl.Readable() {
			t.Fatal("not Readable with data")
		}
		if data, eof, reset := cl.Pending(); !data || eof || reset {
			t.Fatalf("Pending = %v %v %v", data, eof, reset)
		}
		mustRead(t, cl, 1, "x")
		if cl.Readable() {
			t.Fatal("Readable after data was read")
		}
		sv.CloseWrite()
		if !cl.Readable() {
			t.Fatal("not Readable after FIN")
		}
		if data, eof, reset := cl.Pending(); data || !eof || reset {
			t.Fatalf("Pending = %v %v %v", data, eof, reset)
		}
		if sv.Readable() {
			t.Fatal("half-closed end Readable")
		}
	})
}

func TestCloseRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		mustWrite(t, sv, "dropped")
		cl.CloseRead()
		_, err := cl.Read(make([]byte, 10))
		wantErr(t, "read after CloseRead", err, io.EOF)
		mustWrite(t, cl, "still writes")
		mustRead(t, sv, 100, "still writes")
	})
}

func TestOnEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		var events int
		n.SetOnEvent(func() { events++ })
		cl, sv := connect(t, n) // dial, accept
		mustWrite(t, cl, "a")   // write
		mustWrite(t, sv, "b")   // write
		cl.Close()              // FIN... with "b" unread: reset
		sv.Close()              // nothing delivered: the peer is closed
		if events != 5 {
			t.Fatalf("%d events, want 5", events)
		}
	})
}

func TestDialPortWraps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		l, _ := n.Listen("")
		dial := func() *Conn {
			t.Helper()
			c, err := n.Dial(t.Context(), l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		first := dial() // 40000, kept open
		n.mu.Lock()
		n.nextDial = dialPortLast
		n.mu.Unlock()
		last := dial()
		wrapped := dial()
		if a, b, c := first.LocalAddr().String(), last.LocalAddr().String(), wrapped.LocalAddr().String(); a != "127.0.0.1:40000" || b != "127.0.0.1:"+strconv.Itoa(dialPortLast) || c != "127.0.0.1:40001" {
			t.Fatalf("ports %s %s %s", a, b, c)
		}
		// A port is free again once both ends are closed.
		first.Close()
		sv, _ := l.Accept()
		sv.Close()
		n.mu.Lock()
		n.nextDial = dialPortFirst
		n.mu.Unlock()
		if got := dial().LocalAddr().String(); got != "127.0.0.1:40000" {
			t.Fatalf("reused port %s", got)
		}
	})
}

// TestActiveClosesAt counts each listening port's active closes apart: a FIN first from
// either end counts at the port dialled, a reset counts nowhere.
func TestActiveClosesAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		a, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		b, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		dial := func(l *Listener) (cl, sv net.Conn) {
			cl, err := n.Dial(context.Background(), l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			sv, err = l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			return cl, sv
		}
		cl, sv := dial(a) // the client closes first
		cl.Close()
		sv.Close()
		cl, sv = dial(a) // the server closes first
		sv.Close()
		cl.Close()
		cl, sv = dial(b) // a reset: no TIME_WAIT
		cl.(*Conn).Abort()
		sv.Close()
		if got := n.ActiveClosesAt(a.Addr().String()); got != 2 {
			t.Errorf("port A: %d active closes, want 2", got)
		}
		if got := n.ActiveClosesAt(b.Addr().String()); got != 0 {
			t.Errorf("port B: %d active closes, want 0", got)
		}
		if got := n.ActiveClosesAt("127.0.0.1:1"); got != 0 {
			t.Errorf("a port never listened on: %d, want 0", got)
		}
	})
}

// TestKeepaliveProbes: an idle end with keepalive sends a probe to its peer each Idle, at
// exactly those instants, which the peer counts as segments without data; data restarts
// the idle clock; a probe that finds the peer closed draws a reset.
func TestKeepaliveProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		defer n.Close()
		cl, sv := connect(t, n)
		if err := cl.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 3}); err != nil {
			t.Fatal(err)
		}
		want := func(at string, segs, data uint32) {
			t.Helper()
			if s, d := sv.SegsIn(); s != segs || d != data {
				t.Errorf("%s: the peer counted %d segments, %d with data; want %d and %d", at, s, d, segs, data)
			}
		}
		time.Sleep(time.Second - time.Nanosecond)
		want("just before 1 s", 0, 0)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		want("at 1 s", 1, 0)
		time.Sleep(1500 * time.Millisecond) // 2.5 s: one more, at 2 s
		want("at 2.5 s", 2, 0)
		mustWrite(t, cl, "x") // data at 2.5 s: the next probe is due at 3.5 s, not 3 s
		time.Sleep(900 * time.Millisecond)
		want("at 3.4 s", 3, 1)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		want("at 3.5 s", 4, 1)
		mustRead(t, sv, 1, "x")
		sv.Close() // its FIN is one more segment at the client's end
		if s, d := cl.SegsIn(); s != 1 || d != 0 {
			t.Errorf("the client counted %d segments (%d with data), want its peer's FIN alone", s, d)
		}
		time.Sleep(time.Second) // the probe at 4.5 s reaches a closed socket
		synctest.Wait()
		if _, err := cl.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("after a probe to a closed peer: %v, want ECONNRESET", err)
		}
	})
}
