package reuse

import (
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/report"
)

// Each invariant fires on the history that breaks it, and only then.
func TestReuseBookViolations(t *testing.T) {
	t.Parallel()
	ev := func(seq int, conn uint64, reused bool, connect time.Duration) client.Event {
		return client.Event{Seq: seq, ConnID: conn, Reused: reused, Connect: connect, Status: 200}
	}
	// Three requests on two connections: one reused, as the histories allow.
	good := []client.Event{ev(0, 1, false, time.Millisecond), ev(1, 1, true, 0), ev(2, 2, false, time.Millisecond)}
	server := []report.Conn{{Side: "server", ID: 7, ClientConn: 1, Requests: 2}, {Side: "server", ID: 8, ClientConn: 2, Requests: 1}}
	facts := Facts{Requests: 3, Reused: 1, Connections: 2, ServerConns: server, ServerConnections: 2, ProxyConnections: 2, PerConn: true}
	for _, tc := range []struct {
		name   string
		events []client.Event
		edit   func(f *Facts)
		want   string
	}{
		{"consistent", good, func(*Facts) {}, ""},
		{"library flag", good, func(f *Facts) { f.Reused = 2 }, "allow at most 1"},
		{"phase on reuse", []client.Event{ev(0, 1, false, 0), ev(1, 1, true, time.Millisecond), ev(2, 2, false, 0)}, func(*Facts) {}, "connect or TLS phase"},
		{"more than opened", good, func(f *Facts) { f.Connections = 1 }, "more than the 1 the client opened"},
		{"server counted fewer", good, func(f *Facts) {
			f.ServerConns = []report.Conn{{Side: "server", ID: 7, ClientConn: 1, Requests: 1}, server[1]}
		}, "more requests at the client"},
		{"link saw fewer", good, func(f *Facts) { f.ProxyConnections = 1 }, "the link in front of it 1"},
	} {
		b := NewBook()
		for _, e := range tc.events {
			b.Add(e)
		}
		f := facts
		tc.edit(&f)
		got := strings.Join(b.Violations(f), "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want one saying %q", tc.name, got, tc.want)
		}
	}
}
