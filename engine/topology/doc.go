// Package topology builds one run's chain of hops from its settings and drives the load
// through it, into one result: metrics, requests, connections and each hop's record.
//
// # Topology and hops
//
// A run is a topology: a chain of hops built from its settings in one place
// (buildTopology), the client first, then the path it dials:
//
//	client -> [link] -> [balancer -> [backend_link]] -> [middleboxes] -> server
//
// each link only when it has something to simulate. Every hop implements Hop: Start under
// the run's context in front of the next hop's address, returning its own; Identity (kind,
// name, program, version, verified); Timing (the lateness recorders its timers report to);
// Stats (a typed struct, read once after the load); Close (stop and clean up what it
// owns). Capabilities only some hops have are small extra interfaces (the client's drive,
// the server's endpoint and connection records, a front hop's open count and accepted
// ports). drive starts the topology from the server outwards, lets the client hop drive
// the load, winds it down client first, and flattens each hop's Stats into the record's
// metrics in one place (flatten); the record also lists every hop with its identity and
// stats. A new hop (a middlebox, a second link) is a type implementing Hop placed in the
// path: the runner's control flow does not change.
//
// Reuse is counted from each connection's own history (a request is reused when its
// connection carried an earlier one), never from a client library's flag, and every run
// checks it: reused requests are at most the requests less the connections that carried
// them, a reused request has no connect or TLS phase, and no client connection carried
// more answered requests than the server counted on it. A broken invariant ends the run as
// an error.
package topology
