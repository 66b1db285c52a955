package middlebox

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/vnet"
)

// TestVirtualExpiryAndProbes runs the box over the in-memory network on the virtual
// clock: a flow idle for its 350 s expires at 350 s (to within one poll, 100 ms), and later
// data from the client goes nowhere; a client whose keepalive probes every 60 s keeps its
// flow alive across a 10-minute pause, each probe counted as a refresh.
func TestVirtualExpiryAndProbes(t *testing.T) {
	for _, probe := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			n := vnet.New()
			defer n.Close()
			up, err := n.Listen("")
			if err != nil {
				t.Fatal(err)
			}
			boxLn, err := n.Listen("")
			if err != nil {
				t.Fatal(err)
			}
			b, err := Start(Config{Upstream: up.Addr().String(), IdleTimeout: 350 * time.Second, Action: Drop,
				Listener: boxLn, Dial: n.DialContext})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			c, err := n.Dial(context.Background(), b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if probe {
				c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 60 * time.Second, Interval: 60 * time.Second, Count: 9})
			}
			s, err := up.Accept()
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(349*time.Second + 950*time.Millisecond)
			synctest.Wait()
			if got := b.Stats().Expired; got != 0 {
				t.Fatalf("expired %d flows at 349.95 s, before the 350 s timeout", got)
			}
			// 630 s: past the timeout and its poll, and between two probes (a probe and a poll
			// due at one instant are seen in either order, so no check stands on one).
			time.Sleep(280*time.Second + 50*time.Millisecond)
			synctest.Wait()
			st := b.Stats()
			if probe {
				if st.Expired != 0 || st.ProbeRefreshes != 10 {
					t.Fatalf("with probes every 60 s: %+v, want no expiry and 10 refreshes (the probes of 60 s .. 600 s)", st)
				}
			} else if st.Expired != 1 {
				t.Fatalf("without probes: %+v, want the flow expired", st)
			}
			if _, err := c.Write([]byte("GET")); err != nil {
				t.Fatal(err)
			}
			s.SetReadDeadline(time.Now().Add(30 * time.Second))
			buf := make([]byte, 3)
			_, err = s.Read(buf)
			if probe && err != nil {
				t.Fatalf("a live flow lost the request: %v", err)
			}
			if !probe && err == nil {
				t.Fatal("the request crossed an expired flow")
			}
			s.Close()
			c.Close()
		})
	}
}
