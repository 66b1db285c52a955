package client

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// staleOnSecond serves the first request on each connection and then plays the server
// side of a stale-connection race on the second: it reads the request and closes,
// with an RST when rst is set, as a server closing an idle socket just as a request lands.
func staleOnSecond(rst bool) func(s *serverConn) bool {
	return func(s *serverConn) bool {
		if s.req == 0 {
			return okHandler(s)
		}
		if rst {
			s.reset()
		} else {
			s.Close()
		}
		return false
	}
}

func TestShouldRetryPolicy(t *testing.T) {
	t.Parallel()
	on := []ErrorClass{ClassReset, ClassEOF}
	stale := attemptResult{class: ClassReset, reused: true}
	cases := []struct {
		name string
		p    RetryPolicy
		idem bool
		done int
		r    attemptResult
		want bool
	}{
		{"no policy", RetryPolicy{}, true, 1, stale, false},
		{"one retry", RetryPolicy{Attempts: 1, On: on}, true, 1, stale, true},
		{"attempts used up", RetryPolicy{Attempts: 1, On: on}, true, 2, stale, false},
		{"class not listed", RetryPolicy{Attempts: 1, On: []ErrorClass{ClassTimeout}}, true, 1, stale, false},
		{"non-idempotent", RetryPolicy{Attempts: 1, On: on, IdempotentOnly: true}, false, 1, stale, false},
		{"new connection, reused only", RetryPolicy{Attempts: 1, On: on, ReusedOnly: true}, true, 1, attemptResult{class: ClassReset}, false},
		{"bytes came back", RetryPolicy{Attempts: 1, On: on, ZeroBytesOnly: true}, true, 1, attemptResult{class: ClassEOF, reused: true, gotByte: true}, false},
		{"zero bytes on reused", RetryPolicy{Attempts: 1, On: on, ZeroBytesOnly: true}, false, 1, attemptResult{class: ClassEOF, reused: true}, true},
		{"caller cancelled", RetryPolicy{Attempts: 1, On: on}, true, 1, attemptResult{class: ClassReset, cancelled: true}, false},
		{"success", RetryPolicy{Attempts: 1, On: on}, true, 1, attemptResult{}, false},
	}
	for _, tc := range cases {
		if got := shouldRetry(tc.p, tc.idem, tc.done, tc.r); got != tc.want {
			t.Errorf("%s: shouldRetry = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRetryRecoversStaleRace(t *testing.T) {
	t.Parallel()
	retryOnce := RetryPolicy{Attempts: 1, On: []ErrorClass{ClassReset, ClassEOF}, IdempotentOnly: true, ReusedOnly: true}
	curl, _ := profile("curl-multi")
	cases := []struct {
		name     string
		rst      bool
		method   string
		headers  map[string]string
		retry    RetryPolicy
		ok       bool
		attempts int
		hidden   int
	}{
		{"no retry, FIN", false, "GET", nil, RetryPolicy{}, false, 1, 0},
		{"no retry, RST", true, "GET", nil, RetryPolicy{}, false, 1, 0},
		{"one retry, FIN", false, "GET", nil, retryOnce, true, 2, 0},
		{"one retry, RST", true, "GET", nil, retryOnce, true, 2, 0},
		{"POST not retried", true, "POST", nil, retryOnce, false, 1, 0},
		{"POST with idempotency key", true, "POST", map[string]string{"Idempotency-Key": "abc"}, retryOnce, true, 2, 0},
		// libcurl's re-send is its own: the caller sees one attempt that worked.
		{"curl-multi re-sends POST silently", false, "POST", nil, curl.Retry, true, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newRawServer(t, 0, staleOnSecond(tc.rst))
			c := mustNew(t, Config{Addr: srv.addr, KeepAlive: true, Method: tc.method, Headers: tc.headers, Retry: tc.retry})
			wantOK(t, do(t, c, 0))
			ev := do(t, c, 1)
			if ev.OK() != tc.ok || ev.Attempts != tc.attempts || ev.HiddenRetries != tc.hidden {
				t.Fatalf("ok=%v after %d attempts and %d hidden re-sends (%s %q), want ok=%v after %d and %d", ev.OK(), ev.Attempts, ev.HiddenRetries, ev.Class, ev.Error, tc.ok, tc.attempts, tc.hidden)
			}
			if !tc.ok && ev.Class != ClassReset && ev.Class != ClassEOF {
				t.Fatalf("stale reuse failed with class %q (%s), want reset or eof", ev.Class, ev.Error)
			}
			st := c.Stats()
			if st.Retries != int64(tc.attempts-1) || st.HiddenRetries != int64(tc.hidden) {
				t.Fatalf("stats count %d retries and %d hidden, want %d and %d", st.Retries, st.HiddenRetries, tc.attempts-1, tc.hidden)
			}
			if tc.ok && (ev.Reused || ev.ConnID != 2 || st.Connections != 2) {
				t.Fatalf("recovered on connection %d reused=%v with %d connections, want new connection 2", ev.ConnID, ev.Reused, st.Connections)
			}
		})
	}
}

// TestLivenessCheckSkipsClosedIdleConnection: the server closes idle connections after
// 100 ms; a request 500 ms later fails on the dead socket unless the client peeks first.
// This one runs in real time on purpose: its subject is the peek on a real socket (the
// MSG_PEEK of alive) seeing a FIN the kernel delivered. TestLivenessCheckAtTheClose
// judges the same rule on the virtual clock.
func TestLivenessCheckSkipsClosedIdleConnection(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{false, true} {
		srv := newRawServer(t, 100*time.Millisecond, okHandler)
		c := mustNew(t, Config{Addr: srv.addr, KeepAlive: true, LivenessCheck: check})
		wantOK(t, do(t, c, 0))
		time.Sleep(500 * time.Millisecond)
		ev := do(t, c, 1)
		if check {
			wantOK(t, ev)
			if ev.Reused || ev.Attempts != 1 {
				t.Fatalf("with the liveness check: %+v, want a new connection on the first attempt", ev)
			}
			continue
		}
		if ev.OK() || !ev.Reused || (ev.Class != ClassEOF && ev.Class != ClassReset) {
			t.Fatalf("without the liveness check: %+v, want a failure on the reused connection", ev)
		}
	}
}

// TestGoTransportHiddenRetry: Go re-sends a GET that failed on a reused connection by
// itself; kalab sees the second GotConn and counts it.
func TestGoTransportHiddenRetry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		method string
		hidden int
	}{{"GET", 1}, {"POST", 0}}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			srv := newRawServer(t, 0, staleOnSecond(true))
			c := mustNew(t, Config{Implementation: ImplGoNetHTTP, Addr: srv.addr, KeepAlive: true, Method: tc.method})
			first := do(t, c, 0)
			wantOK(t, first)
			ev := do(t, c, 1)
			if ev.HiddenRetries != tc.hidden || ev.Attempts != 1 {
				t.Fatalf("hidden retries %d, attempts %d (%s %q), want %d and 1", ev.HiddenRetries, ev.Attempts, ev.Class, ev.Error, tc.hidden)
			}
			st := c.Stats()
			if st.HiddenRetries != int64(tc.hidden) || st.Retries != 0 {
				t.Fatalf("stats %+v, want %d hidden retries", st, tc.hidden)
			}
			if tc.hidden == 1 {
				wantOK(t, ev)
				if ev.Reused || ev.ConnID != 2 || st.Connections != 2 {
					t.Fatalf("re-sent on connection %d reused=%v with %d connections, want new connection 2", ev.ConnID, ev.Reused, st.Connections)
				}
			} else if ev.OK() || ev.Class != ClassReset {
				t.Fatalf("POST: %+v, want a visible reset", ev)
			}
		})
	}
}

// TestLivenessCheckAtTheClose, on the virtual clock over vnet: the server closes a
// connection idle for 100 ms after its response. A request 1 ns before that reuses the
// connection with or without the liveness check; one 1 ns after it finds the FIN: the
// check (vnet's Pending, the in-memory peek) sends it on a new connection at the first
// attempt, and without the check it fails on the reused connection.
func TestLivenessCheckAtTheClose(t *testing.T) {
	t.Parallel()
	const idleClose = 100 * time.Millisecond
	for _, tc := range []struct {
		check bool
		after time.Duration
	}{
		{false, idleClose - time.Nanosecond}, {true, idleClose - time.Nanosecond},
		{false, idleClose + time.Nanosecond}, {true, idleClose + time.Nanosecond},
	} {
		t.Run(fmt.Sprintf("check=%v/%v", tc.check, tc.after), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newVNet(t)
				srv := newVRawServer(t, n, idleClose, okHandler)
				c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true, LivenessCheck: tc.check})
				wantOK(t, do(t, c, 0))
				time.Sleep(tc.after)
				ev := do(t, c, 1)
				switch {
				case tc.after < idleClose:
					wantOK(t, ev)
					if !ev.Reused || ev.ConnID != 1 {
						t.Fatalf("%+v, want connection 1 reused", ev)
					}
				case tc.check:
					wantOK(t, ev)
					if ev.Reused || ev.Attempts != 1 || ev.ConnID != 2 {
						t.Fatalf("with the liveness check: %+v, want new connection 2 on the first attempt", ev)
					}
				default:
					if ev.OK() || !ev.Reused || (ev.Class != ClassEOF && ev.Class != ClassReset) {
						t.Fatalf("without the liveness check: %+v, want a failure on the reused connection", ev)
					}
				}
			})
		})
	}
}

// TestStaleRaceLoopCountsEveryRetry, on the virtual clock over vnet: the server closes a
// connection idle for 60 ms; requests follow each other after pauses swept from 51 to
// 71 ms, so those after a pause over 60 ms land on a connection the server has closed,
// fail on it and are retried once on a new connection. The plan: the pause after request
// i is 51 + 2*(i%11) ms, over 60 ms for i%11 >= 5, and request i+1 follows it: of the 29
// pauses before requests 1 to 29, i = 5..10, 16..21, 27 and 28 are over, 14 retries. The
// retries the events report add up to that and to the client's counter.
func TestStaleRaceLoopCountsEveryRetry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const idleClose = 60 * time.Millisecond
		n := newVNet(t)
		srv := newVRawServer(t, n, idleClose, okHandler)
		c := mustNew(t, Config{Addr: srv.addr, Dial: n.DialContext, KeepAlive: true,
			Retry: RetryPolicy{Attempts: 1, On: []ErrorClass{ClassReset, ClassEOF}, ReusedOnly: true}})
		retries := 0
		for i := range 30 {
			ev := do(t, c, i)
			wantOK(t, ev)
			retries += ev.Attempts - 1
			time.Sleep(51*time.Millisecond + time.Duration(i%11)*2*time.Millisecond)
		}
		if st := c.Stats(); retries != 14 || st.Retries != 14 || st.Connections != 15 {
			t.Fatalf("events report %d retries, stats %d retries and %d connections; want 14, 14 and 15", retries, st.Retries, st.Connections)
		}
	})
}
