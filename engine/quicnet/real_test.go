package quicnet

import (
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/loopback"
)

// Over real loopback UDP a datagram takes at least RTT/2 each way. Only the lower bound
// is judged: real time adds whatever the machine adds.
func TestRealClock(t *testing.T) {
	before := runtime.NumGoroutine()
	n := Real()
	if _, err := n.ListenPacket("192.0.2.1:0"); !errors.Is(err, loopback.ErrNotLoopback) {
		t.Errorf("Real opened a socket off loopback: %v", err)
	}
	srv := must(n.ListenPacket("127.0.0.1:0"))
	defer srv.Close()
	cli := must(n.ListenPacket("127.0.0.1:0"))
	defer cli.Close()
	const rtt = 40 * ms
	r, err := Start(t.Context(), n, Config{Upstream: srv.LocalAddr().String(), RTT: rtt})
	if err != nil {
		t.Fatal(err)
	}
	_ = srv.SetReadDeadline(time.Now().Add(10 * time.Second))
	_ = cli.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := cli.WriteTo([]byte("ping"), r.Addr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	_, from, err := srv.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < rtt/2 {
		t.Errorf("the datagram crossed in %v, want at least %v", d, rtt/2)
	}
	if _, err := srv.WriteTo([]byte("pong"), from); err != nil {
		t.Fatal(err)
	}
	if n, _, err := cli.ReadFrom(buf); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("the answer: %q, %v", buf[:n], err)
	}
	if d := time.Since(start); d < rtt {
		t.Errorf("the round trip took %v, want at least %v", d, rtt)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var addr *net.UDPAddr
	if _, ok := r.Addr().(*net.UDPAddr); !ok {
		t.Errorf("Addr is a %T, want %T", r.Addr(), addr)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(ms)
	}
}
