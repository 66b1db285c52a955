// Package netsim makes loopback behave like a link of a given round-trip
// time by proxying TCP through per-direction delay queues.
//
// # The model
//
// Start binds a proxy on 127.0.0.1 in front of one upstream. For every
// client it accepts it dials the upstream at once, then:
//
//   - each chunk is released RTT/2 after it arrived (plus optional seeded
//     jitter, uniform in ±Jitter), in order: the delay counts from each
//     chunk's own arrival stamp, so a queue drains as a pipeline, as in
//     toxiproxy's latency toxic;
//   - the first client byte reaches the server no earlier than 1.5 RTT after
//     the client connected (the SYN/SYN-ACK exchange plus its own half trip),
//     and the first server byte reaches the client no earlier than 2 RTT, so a
//     reused request costs 1 RTT, a new plain-TCP request 2 and a new TLS 1.3
//     request 3;
//   - a FIN (clean EOF) becomes CloseWrite on the other side RTT/2 later,
//     behind the data sent before it; when both directions have finished,
//     both sockets close;
//   - a reset (ECONNRESET on read, EPIPE or ECONNRESET on write) becomes
//     SO_LINGER 0 and Close on the other side RTT/2 later, behind the data
//     before it. A server that closed an idle connection answers a late
//     request with RST; the proxy notices that RST (SO_ERROR) and carries it
//     to the client behind the FIN, which is the stale-connection race;
//   - an upstream that refuses the connection becomes a reset to the client
//     one RTT after it connected.
//
// Durations are used as given: the runner scales them before calling Start.
// Nothing is bound or dialed outside 127.0.0.0/8 and ::1.
//
// # How it stays exact and small
//
// Chunks are stamped with the kernel's receive time (SO_TIMESTAMPNS), so
// the proxy's own wake-up latency is not added to the delay. Writers sleep
// on a timer until SpinWindow (1.5 ms by default) before a chunk is due and
// yield in a loop for the rest, because Go timers on Linux fire up to about a
// millisecond late; that spin is the proxy's main CPU cost and can be turned
// off. An idle link holds two reader goroutines and no buffers: a writer
// goroutine exists only while its queue is non-empty, read buffers come
// from a pool and are taken only once a socket is readable, and chunks of up
// to 2 KiB are copied out of them. Each direction has at most 4 MiB in
// flight, like a TCP window. Close tears every link down and waits for every
// goroutine the proxy started.
//
// A simulated connection needs DescriptorsPerConn (4) file descriptors when
// client, proxy and server share a process; RaiseFileLimit raises the soft
// limit and says how many are needed when the hard limit is too low.
//
// # Performance
//
// Measured with
//
//	go test -run '^$' -bench . ./engine/netsim
//
// on a shared 2-vCPU VM (nproc 2; lscpu: AMD EPYC, "Oxide Virtual
// Turin-like Processor", family 26; Linux, go1.26.8), while other test
// suites ran on it (load average 0.7 to 2). Requests are net/http GETs
// with a 11-byte body, client, server and proxy in one process. "direct" is
// the same request sent straight to the server after an idle pause: on this
// VM waking idle threads costs the endpoints 0.4 to 0.6 ms per request with
// no proxy at all, and the proxy's share is the rest.
//
//	                           p50        vs model   proxy's share  p99-p50
//	reused, RTT 50 ms          50.62 ms   +1.24%     +0.24%         2.7 ms
//	reused, RTT 150 ms         150.6 ms   +0.41%     +0.06%         0.91 ms
//	new plain TCP, RTT 150 ms  301.4 ms   +0.46%     +0.07%         1.3 ms
//	new TLS 1.3, RTT 150 ms    454.8 ms   +1.06%     -0.21%         6.5 ms
//	reused, 50 ms, no spin     52.11 ms   +4.2%      +3.3%          (noisy)
//
// A quieter earlier run gave +0.04% as the proxy's share at both 50 and
// 150 ms. Process CPU (client, server and proxy) was about 2.4 ms per reused
// request with spinning and 0.8 to 1.2 ms without, on this VM.
//
// 5,000 idle connections held through one proxy (client and server ends in
// a child process, so only the proxy is measured), each checked with one
// byte each way: none lost, peak RSS growth 8.7 KiB per connection (4.4 KiB
// goroutine stacks, 3.4 KiB heap), 2 goroutines per connection.
package netsim
