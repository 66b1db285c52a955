package quicnet

import (
	"testing"
	"testing/synctest"
	"time"
)

// A client that pauses a nanosecond short of the timeout keeps its address; one that
// pauses the whole timeout comes back from a new one, and the server's datagrams to the
// old one are dropped.
func TestRebind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		g := newRig(t, Config{RTT: 10 * ms, FlowTimeout: timeout})
		srv := g.sink(g.srv, nil)
		cli := g.sink(g.cli, nil)
		g.send("a")
		time.Sleep(timeout - 1)
		g.send("b")
		time.Sleep(timeout)
		g.send("c")
		time.Sleep(100 * ms)
		synctest.Wait()
		got := srv.all()
		if len(got) != 3 || got[0].from != got[1].from || got[2].from == got[1].from {
			t.Fatalf("the server saw %+v: want a and b from one address, c from another", got)
		}
		want := Stats{Flows: 2, Rebinds: 1, Expired: 1, DatagramsUp: 3, BytesUp: 3}
		if st := g.r.Stats(); st != want {
			t.Errorf("stats %+v, want %+v", st, want)
		}
		old, cur := got[0].from, got[2].from
		_, _ = g.srv.WriteTo([]byte("to-old"), udpAddr(old))
		_, _ = g.srv.WriteTo([]byte("to-new"), udpAddr(cur))
		time.Sleep(100 * ms)
		synctest.Wait()
		if c := cli.all(); len(c) != 1 || c[0].data != "to-new" {
			t.Errorf("the client got %+v, want only what was sent to its new address", c)
		}
		if st := g.r.Stats(); st.DroppedExpired != 1 || st.DatagramsDown != 2 {
			t.Errorf("stats %+v, want the datagram to the forgotten flow dropped", st)
		}
	})
}

// The server's datagrams keep a flow alive as the client's do.
func TestServerRefreshes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, Config{FlowTimeout: time.Second})
		srv := g.sink(g.srv, nil)
		g.sink(g.cli, nil)
		g.send("a")
		synctest.Wait()
		flowAddr := udpAddr(srv.all()[0].from)
		time.Sleep(900 * ms)
		_, _ = g.srv.WriteTo([]byte("ping"), flowAddr)
		time.Sleep(900 * ms)
		g.send("b")
		synctest.Wait()
		if got := srv.all(); len(got) != 2 || got[1].from != got[0].from {
			t.Errorf("the server saw %+v: the flow was forgotten though the server spoke", got)
		}
		if st := g.r.Stats(); st.Flows != 1 || st.Expired != 0 {
			t.Errorf("stats %+v", st)
		}
		time.Sleep(time.Second)
		if st := g.r.Stats(); st.Expired != 1 {
			t.Errorf("Expired %d after the flow idled out with no datagram to find it, want 1", st.Expired)
		}
	})
}

// "drop" black-holes the client's address in both directions once its flow is gone.
func TestDropMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, Config{RTT: 10 * ms, FlowTimeout: time.Second, OnExpiry: ExpiryDrop})
		srv := g.sink(g.srv, nil)
		cli := g.sink(g.cli, nil)
		g.send("a")
		time.Sleep(time.Second)
		g.send("b")
		g.send("c")
		synctest.Wait()
		flowAddr := udpAddr(srv.all()[0].from)
		_, _ = g.srv.WriteTo([]byte("late"), flowAddr)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := srv.all(); len(got) != 1 {
			t.Errorf("the server saw %+v, want only a", got)
		}
		if got := cli.all(); len(got) != 0 {
			t.Errorf("the client got %+v through a black hole", got)
		}
		want := Stats{Flows: 1, Expired: 1, DatagramsUp: 3, DatagramsDown: 1, BytesUp: 3, BytesDown: 4, DroppedExpired: 3}
		if st := g.r.Stats(); st != want {
			t.Errorf("stats %+v, want %+v", st, want)
		}
	})
}
