// Package shape holds what a run's settings imply for every room that handles the run:
// how its simulated durations map to real time, and which hops its path needs.
package shape

import (
	"math"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// Scale applies the time scale: every duration of the plan goes through it, and measured
// times are divided back by the metrics package.
type Scale float64

func (s Scale) D(d scenario.Duration) time.Duration {
	return SatDuration(float64(d) * float64(s))
}

// SatDuration converts nanoseconds to a Duration, saturating instead of wrapping: a float
// beyond the int64 range converts to an undefined value in Go (the spec leaves it to the
// implementation), in practice a negative one. The loader rejects plans whose durations
// overflow; this keeps the arithmetic on them honest anyway.
func SatDuration(ns float64) time.Duration {
	switch {
	case ns != ns || ns <= 0: // NaN or not positive
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// Direct reports whether a run has no link to simulate and the embedded server, so the
// client can dial the server without the proxy.
func Direct(st scenario.Settings) bool {
	return st.Network.RTT == 0 && st.Network.Jitter == 0 && st.Network.Bandwidth == 0 &&
		st.Server.Backlog == 0 && st.Server.AcceptDelay == 0 && !st.Server.Real()
}

// DatagramDirect reports whether an HTTP/3 run's client reaches the server without a
// datagram link: nothing to delay, pace or lose.
func DatagramDirect(st scenario.Settings) bool {
	n := st.Network
	return n.RTT == 0 && n.Jitter == 0 && n.Bandwidth == 0 && n.Loss == 0
}

// DirectBehind says whether balancer tier i of st dials what is behind it with no link
// between: its backend network simulates nothing, and what it dials is not a real server
// (whose connections the link is where kalab sees them).
func DirectBehind(st scenario.Settings, tier int) bool {
	bs := st.Balancers()
	n := bs[tier].BackendNetwork
	last := tier == len(bs)-1
	return n.RTT == 0 && n.Jitter == 0 && n.Bandwidth == 0 && !(last && st.Server.Real())
}

// HTTP2 says whether the run's requests go over HTTP/2: the server must offer it and
// the client must take it on this transport (an HTTP/1.1-only client offers only http/1.1 in
// ALPN; curl and Go's DefaultTransport use h2 only when TLS negotiates it).
func HTTP2(st scenario.Settings) bool {
	if st.Server.HTTP != "2" {
		return false
	}
	switch st.Client.HTTP2 {
	case "never":
		return false
	case "tls":
		return st.Server.TLS
	}
	return true
}
