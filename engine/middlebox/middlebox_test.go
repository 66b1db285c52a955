package middlebox

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// pair starts a box in front of a real loopback listener and returns the client's
// connection through it and the server's accepted end of the same flow.
func pair(t *testing.T, cfg Config, d *net.Dialer) (*Box, net.Conn, net.Conn) {
	t.Helper()
	b, c, s, _ := pairListen(t, cfg, d)
	return b, c, s
}

func pairListen(t *testing.T, cfg Config, d *net.Dialer) (*Box, net.Conn, net.Conn, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg.Upstream = ln.Addr().String()
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if d == nil {
		d = &net.Dialer{KeepAlive: -1} // no TCP keepalive unless the test asks
	}
	c, err := d.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return b, c, s, ln
}

// send writes msg on from and reports what to read within wait: the bytes, or the error.
func send(t *testing.T, from, to net.Conn, msg string, wait time.Duration) (string, error) {
	t.Helper()
	if _, err := from.Write([]byte(msg)); err != nil {
		return "", err
	}
	return recv(to, len(msg), wait)
}

func recv(c net.Conn, n int, wait time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func mustPass(t *testing.T, from, to net.Conn, msg string) {
	t.Helper()
	if got, err := send(t, from, to, msg, 2*time.Second); err != nil || got != msg {
		t.Fatalf("%q did not cross the box: got %q, %v", msg, got, err)
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

const idle = 300 * time.Millisecond

// After the idle timeout a dropping box passes nothing in either direction and tells
// neither end: reads time out (no EOF, no reset); a new connection is a new flow.
func TestDropSilencesBothDirections(t *testing.T) {
	t.Parallel()
	b, c, s, ln := pairListen(t, Config{IdleTimeout: idle, Action: Drop}, nil)
	mustPass(t, c, s, "before")
	mustPass(t, s, c, "answer")
	time.Sleep(idle + idle/2)
	if got, err := send(t, c, s, "late request", 500*time.Millisecond); !isTimeout(err) {
		t.Fatalf("after expiry the server read %q, %v; want nothing (a timeout)", got, err)
	}
	if got, err := send(t, s, c, "late answer", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("after expiry the client read %q, %v; want nothing (a timeout)", got, err)
	}
	st := b.Stats()
	if st.Expired != 1 || st.ResetsSent != 0 || st.DroppedBytes != int64(len("late request")+len("late answer")) {
		t.Errorf("stats %+v: want 1 expired, 0 resets, %d dropped bytes", st, len("late request")+len("late answer"))
	}
	if st.DroppedSegments < 2 {
		t.Errorf("dropped %d segments, want at least the 2 late writes", st.DroppedSegments)
	}
	// A new SYN is a new flow.
	c2, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	s2, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	mustPass(t, c2, s2, "new flow")
	if b.Stats().Flows != 2 {
		t.Errorf("flows %d, want 2", b.Stats().Flows)
	}
}

// A box that resets at expiry (Azure's "TCP reset on idle") sends an RST to both ends as
// soon as the timeout runs out, before either sends anything.
func TestResetAtExpiryReachesBothEnds(t *testing.T) {
	t.Parallel()
	b, c, s := pair(t, Config{IdleTimeout: idle, Action: Reset, ResetAt: AtExpiry, ResetTo: Both}, nil)
	mustPass(t, c, s, "before")
	start := time.Now()
	if _, err := recv(c, 1, 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client read %v, want a reset", err)
	}
	if since := time.Since(start); since < idle-20*time.Millisecond {
		t.Errorf("reset after %v, before the %v idle timeout", since, idle)
	}
	if _, err := recv(s, 1, 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("server read %v, want a reset", err)
	}
	if st := b.Stats(); st.Expired != 1 || st.ResetsSent != 2 {
		t.Errorf("stats %+v: want 1 expired, 2 resets", st)
	}
}

// A box that resets at the next segment (the AWS NAT gateway) stays silent until the
// client sends again, then resets the client only; the server hears nothing.
func TestResetAtNextSegmentAnswersTheSender(t *testing.T) {
	t.Parallel()
	b, c, s := pair(t, Config{IdleTimeout: idle, Action: Reset, ResetAt: AtNextSegment, ResetTo: Client}, nil)
	mustPass(t, c, s, "before")
	time.Sleep(idle + idle/2)
	if _, err := recv(c, 1, 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("client read %v before sending: want silence until its next segment", err)
	}
	if b.Stats().ResetsSent != 0 {
		t.Fatalf("a reset went out before any segment")
	}
	if got, err := send(t, c, c, "late", 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client's next segment got %q, %v; want a reset", got, err)
	}
	if _, err := recv(s, 1, 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("server read %v; want nothing (the reset went to the client only)", err)
	}
	if st := b.Stats(); st.Expired != 1 || st.ResetsSent != 1 {
		t.Errorf("stats %+v: want 1 expired, 1 reset", st)
	}
}

// Data in either direction alone keeps a flow alive past several idle timeouts.
func TestDataRefreshesEitherWay(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"client-to-server", "server-to-client"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			b, c, s := pair(t, Config{IdleTimeout: idle, Action: Drop}, nil)
			from, to := c, s
			if dir == "server-to-client" {
				from, to = s, c
			}
			for i := 0; i < 8; i++ { // 8 x idle/2: twice the timeout, never idle for long
				mustPass(t, from, to, "tick")
				time.Sleep(idle / 2)
			}
			mustPass(t, to, from, "other way")
			if st := b.Stats(); st.Expired != 0 {
				t.Errorf("stats %+v: a flow with data every %v expired at %v", st, idle/2, idle)
			}
		})
	}
}

// TCP keepalive probes from the client keep an idle flow alive: the kernel sends them
// (1 s idle, 1 s apart) and the box sees them in the socket's segment count. Without
// keepalive the same silence expires the flow.
func TestKeepaliveProbesRefresh(t *testing.T) {
	t.Parallel()
	const timeout = 1500 * time.Millisecond
	for _, ka := range []bool{true, false} {
		name := map[bool]string{true: "keepalive", false: "no-keepalive"}[ka]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := &net.Dialer{KeepAlive: -1}
			if ka {
				d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 9}
			}
			b, c, s := pair(t, Config{IdleTimeout: timeout, Action: Drop}, d)
			mustPass(t, c, s, "before")
			time.Sleep(2*timeout + timeout/3) // 3.5 s: three probes go out at 1, 2 and 3 s
			got, err := send(t, c, s, "after", 500*time.Millisecond)
			st := b.Stats()
			if ka && (err != nil || st.Expired != 0 || st.ProbeRefreshes < 2) {
				t.Fatalf("with keepalive: read %q, %v; stats %+v; want the data through, no expiry, 2+ probe refreshes", got, err, st)
			}
			if !ka && (!isTimeout(err) || st.Expired != 1 || st.ProbeRefreshes != 0) {
				t.Fatalf("without keepalive: read %q, %v; stats %+v; want a drop", got, err, st)
			}
		})
	}
}

func TestConfigRejected(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Upstream: "10.0.0.1:80", Action: Drop},
		{Upstream: "127.0.0.1:80", Action: "forget"},
		{Upstream: "127.0.0.1:80", Action: Reset, ResetAt: AtExpiry},
		{Upstream: "127.0.0.1:80", Action: Reset, ResetAt: "later", ResetTo: Both},
		{Upstream: "127.0.0.1:80", Action: Drop, IdleTimeout: -1},
	} {
		if b, err := Start(cfg); err == nil {
			b.Close()
			t.Errorf("%+v accepted", cfg)
		}
	}
}
