package server

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// dialErr dials the server's address on loopback and returns the connect's error.
func dialErr(s *Server) error {
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err
}

// TestDrainRefusesOnLoopback: on the real clock a drain closes the listening socket, so a
// connect after it is refused by the kernel (as after Go's Server.Shutdown or nginx -s
// quit), and the server still closes cleanly.
func TestDrainRefusesOnLoopback(t *testing.T) {
	t.Parallel()
	s := start(t, Config{Events: []Event{{Kind: EventDrain, AfterRequests: 1}}})
	rc := dialRaw(t, s)
	rc.mustDo(t, "")
	rc.waitEOF(t, 5*time.Second)
	if err := dialErr(s); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connect after the drain: %v, want ECONNREFUSED", err)
	}
}

// TestRestartGapRefusesOnLoopback: a restart closes the listening socket for its gap (a
// connect is refused), then binds the same address again and serves.
func TestRestartGapRefusesOnLoopback(t *testing.T) {
	t.Parallel()
	const gap = 300 * time.Millisecond
	s := start(t, Config{Events: []Event{{Kind: EventRestart, AfterRequests: 1, Gap: gap}}})
	rc := dialRaw(t, s)
	restarted := time.Now()
	_, _, _, _ = rc.do("") // the restart closes the connection under its own response
	if err := dialErr(s); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connect in the gap: %v, want ECONNREFUSED", err)
	}
	if time.Since(restarted) >= gap {
		t.Skip("the machine took the whole gap to get here: the refusal is not shown")
	}
	var err error
	eventuallyWithin(t, 5*time.Second, "a connect after the gap", func() bool { err = dialErr(s); return err == nil })
	if time.Since(restarted) < gap {
		t.Errorf("a connect succeeded %v after the restart, inside its %v gap", time.Since(restarted), gap)
	}
	rc2 := dialRaw(t, s)
	if resp, _, _ := rc2.mustDo(t, ""); resp.StatusCode != 200 {
		t.Errorf("after the gap: status %d", resp.StatusCode)
	}
}
