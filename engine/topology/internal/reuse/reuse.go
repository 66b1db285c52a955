// Package reuse checks that a run's connection reuse is what its connections' own
// histories allow: the invariants every run is held to, whoever the client is.
package reuse

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/report"
)

// Book keeps what the run's requests say about their connections, to check that
// reuse is what the connections' own histories allow: a request is reused only when its
// connection carried an earlier one, so it had nothing to connect, and the requests a
// connection carried at the client are no more than the server counted on it.
type Book struct {
	answered map[uint64]int64 // client connection -> requests answered on it
	carrying map[uint64]bool  // client connections some request went out on
	phased   int64            // reused requests with a connect or TLS phase
	example  string
}

func NewBook() Book {
	return Book{answered: map[uint64]int64{}, carrying: map[uint64]bool{}}
}

// add takes one request's event (under the recorder's lock).
func (b *Book) Add(ev client.Event) {
	if ev.ConnID != 0 {
		b.carrying[ev.ConnID] = true
		if ev.Status > 0 {
			b.answered[ev.ConnID]++
		}
	}
	if ev.Reused && (ev.Connect > 0 || ev.TLS > 0) {
		if b.phased == 0 {
			b.example = fmt.Sprintf("request %d on connection %d (connect %v, TLS %v)", ev.Seq, ev.ConnID, ev.Connect, ev.TLS)
		}
		b.phased++
	}
}

// Facts are the run's figures the invariants compare.
type Facts struct {
	Requests, Reused, Connections int64
	ServerConns                   []report.Conn // the server's records, side "server", when kalab runs the server
	ServerConnections             int64
	ProxyConnections              int64 // accepted by the link in front of the server; -1 without one
	PerConn                       bool  // client and server connections are the same sockets (no balancer between)
}

// violations lists each broken invariant; empty when the run's reuse is consistent.
func (b *Book) Violations(f Facts) []string {
	var out []string
	requests, carrying := f.Requests, int64(len(b.carrying))
	if carrying == 0 {
		// A client that did not say which connection it used: the server's count, hidden
		// re-sends included.
		requests, carrying = serverCarrying(f.ServerConns)
		requests = max(requests, f.Requests)
	}
	if len(b.carrying) > 0 && carrying > f.Connections {
		out = append(out, fmt.Sprintf("requests went out on %d connections, more than the %d the client opened", carrying, f.Connections))
	}
	if f.Reused > requests-carrying {
		out = append(out, fmt.Sprintf("%d reused requests but %d requests on %d connections allow at most %d",
			f.Reused, requests, carrying, requests-carrying))
	}
	if b.phased > 0 {
		out = append(out, fmt.Sprintf("%d reused requests had a connect or TLS phase, e.g. %s", b.phased, b.example))
	}
	if f.PerConn {
		out = append(out, b.perConnection(f)...)
	}
	return out
}

// perConnection checks that the counts add up across the hops: each client connection
// carried no more answered requests than the server counted on it, and no more
// connections carried requests than the server and the link accepted.
func (b *Book) perConnection(f Facts) []string {
	var out []string
	bad, example := 0, ""
	for _, c := range f.ServerConns {
		if n := b.answered[c.ClientConn]; c.ClientConn != 0 && n > c.Requests {
			if bad == 0 {
				example = fmt.Sprintf("client connection %d answered %d, server connection %d counted %d", c.ClientConn, n, c.ID, c.Requests)
			}
			bad++
		}
	}
	if bad > 0 {
		out = append(out, fmt.Sprintf("%d connections carried more requests at the client than at the server, e.g. %s", bad, example))
	}
	answeredOn := int64(len(b.answered))
	if len(f.ServerConns) > 0 && answeredOn > f.ServerConnections {
		out = append(out, fmt.Sprintf("%d client connections were answered but the server accepted %d", answeredOn, f.ServerConnections))
	}
	if f.ProxyConnections >= 0 && f.ServerConnections > f.ProxyConnections {
		out = append(out, fmt.Sprintf("the server accepted %d connections but the link in front of it %d", f.ServerConnections, f.ProxyConnections))
	}
	return out
}

// serverCarrying counts the requests the server received and its connections that
// carried one: the connections of a client that did not say which it used.
func serverCarrying(conns []report.Conn) (requests, carrying int64) {
	for _, c := range conns {
		if c.Side == "server" && c.Requests > 0 {
			requests += c.Requests
			carrying++
		}
	}
	return requests, carrying
}

// Error is the run's error for broken reuse invariants, nil when there is none.
func Error(v []string) error {
	if len(v) == 0 {
		return nil
	}
	return fmt.Errorf("reuse invariants broken: %s", strings.Join(v, "; "))
}
