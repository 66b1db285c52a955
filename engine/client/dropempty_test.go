package client

import (
	"crypto/tls"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/server"
)

// closeAfter is a handler that answers the nth request of each connection with
// Connection: close and closes it (server.max_requests n).
func closeAfter(n int) func(s *serverConn) bool {
	return func(s *serverConn) bool {
		if s.req == n-1 {
			s.reply("Connection: close\r\n", "hello")
			return false
		}
		return s.reply("", "hello") == nil
	}
}

// awaited is an awaited loop of n requests: each after the first follows straight on.
func awaited(n int) []bool {
	f := make([]bool, n)
	for i := 1; i < n; i++ {
		f[i] = true
	}
	return f
}

// Under undici 7's Agent (DropEmptyPool) a server that closes after n requests: clients A
// and B alternate over requests 0 to 2n-1 (connections 1 and 2) as in undici 6; B's close
// brings the Agent's count to zero while A reconnects in place for request 2n (connection
// 3), so the Pool is closed under it and A closes connection 3 itself after that one
// response; that close is counted against the Pool request 2n+1 made, which closes too,
// and so on: request i >= 2n gets connection i-2n+3, closed by the client (pool_closed).
// Without the Agent (undici 6) each connection carries n requests: R/n connections.
func TestDropEmptyPoolServerCloses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, requests, want int }{{6, 40, 30}, {2, 20, 18}} {
		synctest.Test(t, func(t *testing.T) {
			vn := newVNet(t)
			srv := newVRawServer(t, vn, 0, closeAfter(tc.n))
			c := mustNew(t, Config{Addr: srv.addr, Dial: vn.DialContext, KeepAlive: true, LivenessCheck: true, Scheduling: Creation, DropEmptyPool: true})
			evs := creationRun(t, c, awaited(tc.requests), nil, 0)
			want := make([]uint64, len(evs))
			for i := range want {
				if want[i] = uint64(1 + i%2); i >= 2*tc.n {
					want[i] = uint64(i - 2*tc.n + 3)
				}
			}
			for _, ev := range evs {
				wantOK(t, ev)
			}
			if got := connIDs(evs); !slices.Equal(got, want) {
				t.Errorf("close after %d: connections %v, want %v", tc.n, got, want)
			}
			if st := c.Stats(); st.Connections != int64(tc.want) {
				t.Errorf("close after %d: %d connections, want %d", tc.n, st.Connections, tc.want)
			}
			reasons := c.(CloseReasoner).CloseReasons()
			for id := uint64(3); id <= uint64(tc.want); id++ {
				if reasons[id] != ReasonPoolClosed {
					t.Errorf("close after %d: connection %d closed by the client for %q, want %q", tc.n, id, reasons[id], ReasonPoolClosed)
				}
			}
		})
	}
}

// A caller that yields a tick between requests still finds the Client of a response that
// closed its socket busy (it drains on the socket's 'close' event, after the caller's
// setImmediate), so the request after a close goes to a second Client, and the next one
// back to the first, free again and first in creation order. At n = 7 and 30 requests:
// without the Agent, A carries 0-6 (connection 1), B request 7 (2), A reconnects in place
// for 8-14 (3), B 15 (2), A 16-22 (4), B 23 (2), A 24-29 (5): 5 connections. Under the
// Agent, A's close brings the count to zero while B connects, so B closes after request 7
// and every request from 8 on opens connection i-5: 24.
func TestDropEmptyPoolCallerYields(t *testing.T) {
	t.Parallel()
	undici6 := slices.Concat(slices.Repeat([]uint64{1}, 7), []uint64{2}, slices.Repeat([]uint64{3}, 7),
		[]uint64{2}, slices.Repeat([]uint64{4}, 7), []uint64{2}, slices.Repeat([]uint64{5}, 6))
	undici7 := slices.Repeat([]uint64{1}, 7)
	for i := 7; i < 30; i++ {
		undici7 = append(undici7, uint64(i-5))
	}
	for _, tc := range []struct {
		drop bool
		want []uint64
	}{{false, undici6}, {true, undici7}} {
		synctest.Test(t, func(t *testing.T) {
			vn := newVNet(t)
			srv := newVRawServer(t, vn, 0, closeAfter(7))
			c := mustNew(t, Config{Addr: srv.addr, Dial: vn.DialContext, KeepAlive: true, LivenessCheck: true, Scheduling: Creation, CallerYields: true, DropEmptyPool: tc.drop})
			evs := creationRun(t, c, awaited(30), nil, 0)
			for _, ev := range evs {
				wantOK(t, ev)
			}
			if got := connIDs(evs); !slices.Equal(got, tc.want) {
				t.Errorf("drop_empty_pool %v: connections %v, want %v", tc.drop, got, tc.want)
			}
		})
	}
}

// After a pause the server's idle close ended, each request opens a new connection. Under
// undici 6 (one Pool, one connector) the last three resume the first one's TLS session;
// under undici 7's Agent the close brought the count to zero, the Pool went, and the new
// Pool's connector has an empty session cache: none resumes. A new Pool also means a new
// Client: the connection is not reconnected in place but it is still one per request.
func TestDropEmptyPoolSessionCache(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		drop    bool
		resumed int64
	}{{false, 3}, {true, 0}} {
		synctest.Test(t, func(t *testing.T) {
			cert, roots, err := server.NewCertificate() // valid from the bubble's clock
			if err != nil {
				t.Fatal(err)
			}
			vn := newVNet(t)
			ln, err := vn.Listen("")
			if err != nil {
				t.Fatal(err)
			}
			tln := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
			srv := serveRaw(t, tln, time.Second, okHandler)
			c := mustNew(t, Config{Addr: srv.addr, Dial: vn.DialContext, TLS: true, RootCAs: roots, ServerName: "localhost",
				SessionResumption: true, KeepAlive: true, LivenessCheck: true, Scheduling: Creation, DropEmptyPool: tc.drop})
			evs := creationRun(t, c, make([]bool, 4), map[int]bool{1: true, 2: true, 3: true}, 1500*time.Millisecond)
			for _, ev := range evs {
				wantOK(t, ev)
			}
			st := c.Stats()
			if st.Connections != 4 || st.TLSResumed != tc.resumed {
				t.Errorf("drop_empty_pool %v: %d connections, %d resumed; want 4 and %d", tc.drop, st.Connections, st.TLSResumed, tc.resumed)
			}
		})
	}
}
