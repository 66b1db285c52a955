package stage

import "time"

// The handshake: the SYN and SYN-ACK cost one round trip before anything else moves,
// and the links model it by when a connection's first bytes may arrive.
//
//   - The client's first byte leaves once the SYN-ACK is back (1 RTT after the connect)
//     and needs half a trip more: it reaches the server no sooner than 1.5 RTT.
//   - The server can answer no sooner than it accepted, so its first byte reaches the
//     client no sooner than 2 RTT.
//   - A connect the upstream refuses is answered with a reset one RTT after it began,
//     when the refused SYN's reset would be back.
//
// So a reused request costs 1 RTT, a new plain-TCP request 2, a new TLS 1.3 request 3.

// Floors returns the handshake's floors of a connection the client opened at t0 on a
// link of round trip rtt: nothing reaches the server before up, nor the client before
// down.
func Floors(t0 time.Time, rtt time.Duration) (up, down time.Time) {
	return t0.Add(rtt + rtt/2), t0.Add(2 * rtt)
}

// Refused is when the client of a connection that opened at t0 learns that the upstream
// refused it: one round trip after it connected.
func Refused(t0 time.Time, rtt time.Duration) time.Time { return t0.Add(rtt) }
