package netsim

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// TestReleasesNeedNoWriterGoroutine sends request-sized echoes through a link and checks
// that no writer goroutine was started for them: each chunk is released by the shared
// clock's goroutine (or, already due, by its reader) with one non-blocking write. A
// goroutine started and woken per chunk was a fifth of the proxy's CPU at 1 ms RTT.
func TestReleasesNeedNoWriterGoroutine(t *testing.T) {
	t.Parallel()
	p := startProxy(t, tcpServer(t, echo), 2*time.Millisecond)
	c := dial(t, p.Addr())
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	msg := bytes.Repeat([]byte("0123456789"), 10)
	got := make([]byte, len(msg))
	for i := range 40 {
		msg[0] = byte(i)
		t0 := time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("echo %d came back as %q", i, got)
		}
		if el := time.Since(t0); i > 0 && el < 2*time.Millisecond {
			t.Fatalf("echo %d took %v, less than the 2 ms round trip", i, el)
		}
	}
	if n := p.writers.Load(); n != 0 {
		t.Errorf("%d writer goroutines started for 80 small chunks, want 0", n)
	}
}

// TestFullSocketHandsOverToWriter makes the proxy's writes meet a full socket: the server
// reads nothing for 300 ms while 16 MiB are sent to it. The non-blocking release must hand
// what the socket did not take to a writer goroutine, which blocks until there is room,
// and every byte must arrive once and in order.
func TestFullSocketHandsOverToWriter(t *testing.T) {
	t.Parallel()
	const size = 16 << 20
	payload := make([]byte, size)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}
	want := sha256.Sum256(payload)
	done := make(chan [32]byte, 1)
	addr := tcpServer(t, func(c *net.TCPConn) {
		time.Sleep(300 * time.Millisecond)
		h := sha256.New()
		_, _ = io.CopyN(h, c, size)
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		done <- sum
		_, _ = io.Copy(io.Discard, c)
	})
	p := startProxy(t, addr, 2*time.Millisecond)
	c := dial(t, p.Addr())
	go func() { _, _ = c.Write(payload) }()
	select {
	case got := <-done:
		if got != want {
			t.Fatal("upload corrupted: SHA-256 differs")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not get 16 MiB in 30 s")
	}
	// Counted before anything closes: no FIN or reset has been released yet.
	if n := p.writers.Load(); n == 0 {
		t.Error("no writer goroutine took over from a full socket: was the socket never full?")
	}
	// The count follows each write's return, which the server's read can overtake: wait
	// for it (bounded) rather than read it at once.
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().BytesUp != size && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := p.Stats(); st.BytesUp != size {
		t.Errorf("BytesUp = %d 5 s after the server had every byte, want %d", st.BytesUp, size)
	}
}

// TestCloseDoesNotWaitForQueuedChunks closes a proxy whose only chunk is scheduled on
// the shared clock 30 s ahead (the handshake floor at 20 s RTT): Close must take the
// release back at once rather than wait for its due time.
func TestCloseDoesNotWaitForQueuedChunks(t *testing.T) {
	t.Parallel()
	p, err := Start(Config{Upstream: tcpServer(t, echo), RTT: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the chunk queued", func() bool {
		for _, l := range p.liveLinks() {
			l.up.mu.Lock()
			q := l.up.clocked
			l.up.mu.Unlock()
			if q {
				return true
			}
		}
		return false
	})
	t0 := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > 5*time.Second {
		t.Errorf("Close took %v: it waited for a chunk due in 30 s", el)
	}
}
