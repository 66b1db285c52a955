// Package stage holds the stages that time a simulated link, its directions and its
// edge, as pure computation: given when a sender wrote bytes (or half-closed, or reset),
// they say when each piece is released at the other end. The real relay over loopback sockets and the
// virtual link over an in-memory network both use them, so the two keep one model.
//
// A chunk of data passes, in order:
//
//   - the congestion window (slowstart.go): slow start from an initial window of
//     MSS-byte segments that doubles per round trip, and its restart after idle
//     (restart.go), which splits the chunk into pieces by the round each leaves in;
//   - pacing (pacing.go): an optional bandwidth limit that serializes the bytes;
//   - latency (latency.go): the one-way delay, RTT/2 plus a seeded jitter, never before
//     the handshake's floor;
//   - the sequence (close.go): a piece is never released before the one queued ahead of
//     it, whatever its jitter.
//
// A FIN or a reset (close.go) skips the window and pacing: it takes the one-way delay
// and then its place in the sequence, behind the data sent before it; a second reset of
// a direction is dropped.
//
// Before any of that a connection passes the listen queue at the link's edge
// (backlog.go), which says when a server slow to accept takes it, or that the queue is
// full, and its handshake (handshake.go) sets the floors before which nothing of either
// direction arrives.
//
// Path (path.go) chains the stages of one direction. Nothing here reads a clock, sleeps
// or touches a socket: the links do, and hand these stages the instants they saw.
package stage
