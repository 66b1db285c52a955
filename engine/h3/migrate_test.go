package h3

import (
	"testing"
	"testing/synctest"
	"time"
)

// A NAT maps the client's flow to a new port between two requests: the server sees the
// connection's packets come from a new address and moves the connection there once it
// validated it. The request stays on its connection but takes a round trip more: quic-go
// answers it at once on the old address (lost: the NAT no longer maps it), challenges the
// new one (PATH_CHALLENGE), and sends the response again there when PATH_RESPONSE came
// back and it switched paths.
func TestNATRebinding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, ServerConfig{IdleTimeout: 30 * time.Second})
		c := l.client(ClientConfig{})
		do(t, c, 0, 2*rtt)
		time.Sleep(time.Second)
		l.net.rebind(l.sockets[0])
		ev := do(t, c, 1, 2*rtt)
		if !ev.Reused || ev.ConnID != 1 || ev.ServerConn != 1 {
			t.Errorf("reused %v conn %d server conn %d, want true 1 1", ev.Reused, ev.ConnID, ev.ServerConn)
		}
		do(t, c, 2, rtt) // the new path is the connection's now
		st := l.srv.Stats()
		if st.PathMigrations != 1 || st.Connections != 1 || st.Conns[0].Requests != 3 {
			t.Errorf("server path migrations %d connections %d requests on it %d, want 1 1 3", st.PathMigrations, st.Connections, st.Conns[0].Requests)
		}
		if q := c.QUIC(); q.PathMigrations != 0 {
			t.Errorf("client path migrations %d, want 0 (the NAT moved it, not the client)", q.PathMigrations)
		}
	})
}
