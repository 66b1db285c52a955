// Package h3 is kalab's HTTP/3: an embedded server and a client, both over quic-go, on
// datagram sockets the caller hands in (a real UDP socket, or the in-memory network of a
// run on the virtual clock). It implements nothing of the network itself.
//
// What the experiments turn on lives in QUIC rather than in HTTP: the idle timeout each
// end announces (the connection uses the smaller), keep-alive PINGs, 0-RTT on a resumed
// session and its rejection, and a client address that changes under a NAT. Both ends count
// these from quic-go's own qlog events (trace.go): quic-go hands each connection's events
// to a Trace of kalab's, which keeps counts and never encodes a record.
//
// The client manages its one connection itself instead of through http3.Transport, so
// that it decides which request goes out before the handshake completed: it dials with
// quic.Transport.DialEarly, lets http3.ClientConn run the control streams, and writes
// each request's HEADERS and DATA frames on a stream of its own (wire.go explains why).
// Each connection gets its own socket from ClientConfig.ListenPacket, closed when the
// connection ends, as browsers and curl open one UDP flow per connection.
package h3
