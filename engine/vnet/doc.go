// Package vnet is an in-memory network for one kalab run whose connections behave
// like loopback TCP sockets, so that net/http servers and transports, crypto/tls and
// kalab's own HTTP/1.1 client run over it unchanged, including inside a
// testing/synctest bubble with its virtual clock.
//
// Everything that waits in vnet waits on a channel created by the Network, Listener
// or Conn, or on a timer, so inside a synctest bubble a goroutine blocked in Accept
// or Read is durably blocked and the fake clock can advance. Mutexes guard only short
// critical sections. No goroutine runs per connection and none per write.
//
// # What vnet models
//
//   - One host, 127.0.0.1. Listeners bind ports; the host part of an address is
//     parsed but not checked. Ports are allocated deterministically: listeners that
//     ask for port 0 get 10000, 10001, ... (wrapping below 40000), dialers get local
//     ports 40000, 40001, ... (wrapping at 65535 to 40000, skipping ports of
//     connections still open), in the order of the calls.
//   - Connection set-up: Dial puts the server end in the listener's accept queue and
//     returns at once. No listener at the port: ECONNREFUSED. Closing a listener
//     resets the connections still queued on it.
//   - Byte streams: a Write copies its bytes into the peer's receive queue and the
//     peer can read them at once. Writes from concurrent writers are not interleaved.
//   - Orderly release: Close or CloseWrite sends a FIN; the peer reads io.EOF after
//     the data sent before it. A half-closed end keeps reading.
//   - Resets, as Linux sends them: Abort (close with SO_LINGER 0), Close of an end
//     with unread received data, and data arriving at an end that is already closed
//     all reset the peer. A reset discards the receiver's unread data at once, even
//     after a FIN. Its reads then fail with ECONNRESET; a write fails with
//     ECONNRESET until a read or write has reported the reset, then with EPIPE.
//   - Network.Close closes every listener and every end still open, so that each
//     blocked call returns (net.ErrClosed).
//   - Deadlines, on the time package's clock (virtual inside a bubble).
//   - Errors shaped like the net package's: *net.OpError with Net "tcp" wrapping an
//     *os.SyscallError for errno values (errors.Is works with syscall.ECONNRESET,
//     EPIPE, ECONNREFUSED, EADDRINUSE), os.ErrDeadlineExceeded for deadlines,
//     net.ErrClosed for use of a closed end, and a bare io.EOF.
//   - The active closer: the end that sends a connection's first FIN is counted in
//     Stats as it would hold TIME_WAIT; an end that resets is not.
//
// # Order
//
// Network.Order makes the network the one place where events due at the same virtual
// instant are ordered: what At (and Sleep, and the deadlines and keepalive timers of its
// connections) schedules runs on one goroutine, by due time and then in the order it was
// scheduled, each step once every other goroutine of the bubble is durably blocked
// (testing/synctest.Wait). The run's links, load, server and middlebox schedule their timed
// steps here, so which of a burst's requests dials first, or which of two responses due
// together is read first, is the same in every run and at every GOMAXPROCS.
//
// # What vnet does not model
//
// There is no delay (a write is visible to the peer at once; a relay link on top of
// vnet adds latency), no loss, no reordering, no segmentation, no MSS, no windows,
// no buffer limits and no backpressure (Write never blocks and receive queues are
// unbounded), no accept backlog limit (QueueLen reports the queue; limiting it is
// the caller's business), no TIME_WAIT state (only the count), no SYN handshake,
// no keepalive probes and no Nagle.
package vnet
