package netsim

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/kernel"
)

// TestIdleLinksHoldNoGoroutine guards this: a link idle for idleHandoff
// holds no goroutine (its readers wait in the idle parker's epoll set), and a
// parked direction still carries data, delayed as ever, and a close. Runs
// alone (not parallel) so the goroutine census sees only this proxy.
func TestIdleLinksHoldNoGoroutine(t *testing.T) {
	if got := proxyGoroutines(); got != 0 {
		t.Fatalf("%d proxy goroutines before the test", got)
	}
	const links, rtt = 4, 20 * time.Millisecond
	p, err := Start(Config{Upstream: tcpServer(t, echo), RTT: rtt})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conns := make([]io.ReadWriteCloser, links)
	for i := range conns {
		c := dial(t, p.Addr())
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		conns[i] = c
		echoTrip(t, c, "first")
	}
	// The accept loop and the parker, and nothing per link; without the
	// parker (KALAB_NETSIM_PORTABLE=1) each link keeps its two readers.
	want := 2
	if kernel.Portable {
		want = 1 + 2*links
	}
	waitFor(t, "idle readers parked", func() bool { return proxyGoroutines() == want })
	for _, c := range conns {
		if took := echoTrip(t, c, "again"); took < rtt {
			t.Errorf("a round trip through a parked link took %v, less than its RTT %v", took, rtt)
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	waitFor(t, "links closed from idle", func() bool { return p.Stats().Open == 0 })
}

// echoTrip sends msg through c to the echo server and reads it back.
func echoTrip(t *testing.T, c io.ReadWriter, msg string) time.Duration {
	t.Helper()
	t0 := time.Now()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, []byte(msg)) {
		t.Fatalf("echo through the proxy: %q, %v; want %q", got, err, msg)
	}
	return time.Since(t0)
}
