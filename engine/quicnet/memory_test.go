package quicnet

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/loopback"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestMemoryBind(t *testing.T) {
	m := NewMemory()
	defer m.Close()
	a := must(m.ListenPacket("127.0.0.1:0"))
	b := must(m.ListenPacket("localhost:0"))
	if got := a.LocalAddr().String() + " " + b.LocalAddr().String(); got != "127.0.0.1:20000 127.0.0.1:20001" {
		t.Errorf("picked ports %s, want 20000 and 20001 in order", got)
	}
	if _, ok := a.LocalAddr().(*net.UDPAddr); !ok {
		t.Errorf("LocalAddr is a %T, want *net.UDPAddr", a.LocalAddr())
	}
	must(m.ListenPacket("127.0.0.1:9000"))
	if _, err := m.ListenPacket("127.0.0.1:9000"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("binding a bound port: %v, want EADDRINUSE", err)
	}
	for _, addr := range []string{"192.0.2.1:9000", "0.0.0.0:0", ":0"} {
		if _, err := m.ListenPacket(addr); !errors.Is(err, loopback.ErrNotLoopback) {
			t.Errorf("ListenPacket(%q) = %v, want a refusal", addr, err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := m.ListenPacket("127.0.0.1:20000"); err != nil {
		t.Errorf("a closed socket's port is not free again: %v", err)
	}
	for _, pc := range []net.PacketConn{b} {
		if _, ok := pc.(interface {
			SetReadBuffer(int) error
			SetWriteBuffer(int) error
		}); !ok {
			t.Error("no SetReadBuffer/SetWriteBuffer: quic-go would warn")
		}
	}
}

func TestMemoryDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		m.QueueLen = 3
		defer m.Close()
		rx := must(m.ListenPacket("127.0.0.1:9000"))
		tx := must(m.ListenPacket("127.0.0.1:0"))
		buf := []byte("abcd")
		for _, s := range []string{"1", "2", "3", "4"} {
			copy(buf, s)
			if n, err := tx.WriteTo(buf[:1], rx.LocalAddr()); n != 1 || err != nil {
				t.Fatalf("WriteTo = %d, %v", n, err)
			}
		}
		if _, err := tx.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9999}); err != nil {
			t.Fatalf("a write to nobody fails: %v", err)
		}
		p := make([]byte, 10)
		var got string
		for range 3 {
			n, from, err := rx.ReadFrom(p)
			if err != nil || from.String() != tx.LocalAddr().String() {
				t.Fatalf("ReadFrom = %v, %v", from, err)
			}
			got += string(p[:n])
		}
		if got != "123" {
			t.Errorf("read %q, want 123: FIFO, the writer's buffer copied, the fourth dropped", got)
		}
		if s := m.Stats(); s != (MemoryStats{Delivered: 3, Overflow: 1, Unbound: 1}) {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestMemoryDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		defer m.Close()
		pc := must(m.ListenPacket("127.0.0.1:0"))
		start := time.Now()
		_ = pc.SetReadDeadline(start.Add(time.Second))
		go func() {
			// A later deadline set while the reader waits moves its wake-up.
			time.Sleep(500 * time.Millisecond)
			_ = pc.SetDeadline(start.Add(3 * time.Second))
		}()
		_, _, err := pc.ReadFrom(make([]byte, 1))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("ReadFrom past the deadline: %v, want a net.Error that is a timeout", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("the read timed out after %v, want 3s", d)
		}
		if _, _, err := pc.ReadFrom(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("a read past the deadline: %v", err)
		}
		_ = pc.SetReadDeadline(time.Time{})
		go func() {
			time.Sleep(time.Second)
			_ = pc.Close()
		}()
		if _, _, err := pc.ReadFrom(make([]byte, 1)); !errors.Is(err, net.ErrClosed) || time.Since(start) != 4*time.Second {
			t.Errorf("Close unblocked the reader with %v at %v, want net.ErrClosed at 4s", err, time.Since(start))
		}
		if _, err := pc.WriteTo([]byte("x"), pc.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("a write on a closed socket: %v", err)
		}
	})
}
