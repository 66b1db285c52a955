// Package quicnet is the datagram network HTTP/3 runs over: packet sockets (Net) that
// are in-memory for the virtual clock (Memory) or loopback UDP for the real one (Real),
// and the datagram link between a client and a server (Relay), which adds delay,
// jitter, a bandwidth limit and loss, forgets idle flows as a NAT does, and can replay
// a client's 0-RTT first flight as an on-path attacker would.
//
// # The network
//
// Memory delivers a datagram at once, in order per destination, into the receiver's
// bounded queue; a full queue or a port nobody bound drops it, as UDP does. Everything
// that waits in it waits on a channel or a timer, so inside a testing/synctest bubble a
// reader is durably blocked and the virtual clock can advance. Delay is never the
// network's: it is the relay's.
//
// # The link
//
// Each datagram that reaches the relay passes, in this order:
//
//   - the flow table, a NAT's or a firewall's: a client address gets its own upstream
//     socket (the server sees one address per flow), and a flow no datagram crossed, in
//     either direction, for FlowTimeout is forgotten. Either direction refreshes it, as
//     Linux conntrack does for UDP; a home NAT that refreshes on outbound traffic only
//     would forget a flow whose server talks alone, which this model keeps. The clock of
//     the table is the instant a datagram reaches the relay, before its delay. Expiry is
//     decided when the next datagram of the flow arrives (and by Stats), against
//     last activity+FlowTimeout: a datagram at exactly that instant finds the flow gone,
//     one a nanosecond earlier refreshes it. Deciding lazily keeps a run's timers to the
//     datagrams' own, and gives the same answers a timer would;
//   - the first-flight recorder of the replay model (ReplayFirstFlight), which copies
//     what the client sent before the loss model could lose it;
//   - the loss model: a seeded draw per datagram, one PCG stream per direction;
//   - the bandwidth limit (stage.Pacer, one per direction for the whole link: every flow
//     of a client shares its path's bottleneck) and the one-way delay (stage.Latency:
//     RTT/2 plus seeded one-sided jitter). A datagram is never released before the one
//     ahead of it in its flow and direction, so jitter never reorders.
//
// Durations are used as given. Only loopback addresses are ever bound or written to.
package quicnet
