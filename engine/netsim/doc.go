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
//     one RTT after it connected;
//   - data leaves its sender by a TCP sending model (package stage): slow start
//     from an initial window of 10 segments that doubles per round trip, the
//     window's restart after idle as Linux does it, and an optional bandwidth
//     limit per link or shared; a chunk is released RTT/2 after its last byte
//     left the sender, so a chunk may be split across rounds;
//   - an optional listen queue at the edge (backlog.go): a real kernel
//     backlog whose overflow drops SYNs, or a modelled one that resets.
//
// Durations are used as given: the runner scales them before calling Start.
// Nothing is bound or dialed outside 127.0.0.0/8 and ::1.
//
// # Where things live
//
// This package holds the two links: the relay over loopback sockets (Start,
// Proxy: proxy.go, link*.go, queue.go) and its twin over the in-memory
// network engine/vnet (StartVirtual, VirtualProxy: virtual*.go), with what
// they share to carry bytes (Config, Stats, the listen queue's modes). What
// they compute and call lives below it, and never imports it:
//
//   - stage: the timing of a link as pure computation, one stage per file
//     (handshake floors, listen queue, slow start, restart after idle,
//     pacing, one-way delay and jitter, the order of data, FIN and reset);
//   - clock: the process-wide precise clock that releases the relay's chunks
//     and wakes Sleepers, and the coalescing grid;
//   - conntrack: each link's ConnRecord, who closed first and why;
//   - kernel: the system calls below Go's net (timerfd, receive stamps,
//     TCP_INQ, raw writes, SO_ERROR, listen backlog, the epoll parker, the
//     file limit) with their fallbacks.
//
// # How it stays exact and small
//
// Chunks are stamped with the kernel's receive time (SO_TIMESTAMPNS), so
// the proxy's own wake-up latency is not added to the delay. Go timers on
// Linux fire up to about a millisecond late (the netpoller waits in whole
// milliseconds), so a chunk due within SpinWindow (1.5 ms by default) is
// waited for by one precise clock shared by every proxy in the process. That clock's single goroutine blocks on a timerfd, a kernel
// high-resolution timer the netpoller reports as soon as it expires, set
// 250 µs before the earliest deadline, yields in a loop for those last
// 250 µs (a vCPU woken from idle takes 100 to 250 µs to run it), and
// releases every chunk whose deadline passed, in deadline order. However many
// links are waiting, at most one goroutine spins, for at most 250 µs per
// deadline; the goroutine exits when nothing is pending. It spins only
// while deadlines are sparse (fewer than 4 releases in the current and the
// previous millisecond) and for at most a quarter of wall time: dense
// deadlines, many links at a small RTT, would keep it yielding without
// pause and take a core from the endpoints, so then it blocks on the
// timerfd until the deadline itself (measured in package clock: at 1 ms RTT
// with 8 in flight, 1.05-1.16x instead of 1.14-1.29x the model plus the
// endpoints' own time, for 15-30 µs more lateness per release). Where no timerfd
// is available it sleeps on a Go timer and spins the whole window. A
// negative SpinWindow gives every direction a writer goroutine on a plain
// Go timer instead, which costs more CPU and is about a millisecond less
// exact.
//
// Releases are coalesced on a grid: a chunk due at t is released at the end
// of the quantum holding t, so every chunk due within one quantum, on any
// link of the process, is released by the same wake-up. The quantum is
// RTT/50, at most 20 µs (20 µs at 1 ms RTT and above, 10 µs at 0.5 ms).
// The rule is exact: a chunk is never released before its due time, and the
// grid adds less than one quantum (clock.FireAt, TestFireAtNeverEarly). A chunk
// whose due time has already passed when it is queued is released
// at once: nothing is armed and nothing is rounded. Config.Lag records each
// release against the chunk's own due time, so the quantum's delay counts as
// lateness like any other (TestCoalescingDelayIsRecordedAsLateness).
//
// A chunk is released without a goroutine of its own: the shared clock's
// goroutine, when the chunk is due, writes it to the destination socket
// with one non-blocking write (fire, in queue.go), and a reader that finds
// its chunk already due writes it the same way. Only what cannot be done
// at once (a socket without room for the whole chunk, a FIN or reset to
// deliver, a failed socket, or a link without the precise clock) goes to
// a writer goroutine, which may block, and which exists only while its
// queue is non-empty. So an idle link holds two reader goroutines and no
// buffers: read buffers come from a pool and are taken only once a socket
// is readable, and chunks of up to 2 KiB are copied out of them into
// pooled 2 KiB buffers. The hot path allocates nothing per chunk: the
// clock registrations, the timer, the queue's array and the reader's
// recvmsg and the writer's write callbacks are kept per direction and
// reused. Each direction has at most 4 MiB in flight, like a TCP window.
// Close tears every link down, takes back the releases scheduled on the
// clock and waits for every goroutine the proxy started; the shared
// clock's goroutine belongs to no proxy and ends by itself once nothing is
// scheduled.
//
// A simulated connection needs DescriptorsPerConn (4) file descriptors when
// client, proxy and server share a process; kernel.RaiseFileLimit raises the soft
// limit and says how many are needed when the hard limit is too low.
//
// # Performance
//
// What the relay costs comes down to the sockets, not to its timers. One clock goroutine
// serves every link (a per-writer spin crowded the endpoints out once dozens of links
// waited at once); it writes each due chunk itself with one non-blocking write, re-arms its
// timerfd only to wake earlier, and parks on it without reading it. With TCP_INQ (Linux
// 4.18) each recvmsg says how many bytes it left, so a reader that emptied its socket waits
// on the netpoller instead of reading again, and the idle read deadline is not moved per
// chunk. What is left of the proxy's CPU is the kernel's: every loopback write runs the
// receiver's TCP path and wakes its thread, and a plain io.Copy relay with no delay costs
// about as much as the proxy at RTT 0.
//
// The benchmarks measure it, each as a ratio against a peer in the same run (the same load
// straight to the server, or the model's own time):
//
//	go test -run '^$' -bench . ./engine/netsim
//
// BenchmarkSmallRTT reports what the link adds at 1 ms RTT over the endpoints' own time
// ("x-direct") and over the model ("x-model"); BenchmarkParallelReused several proxies at
// once. TestPerfGate (KALAB_PERFGATE=1) holds the figures CI gates on: idle memory per
// connection, allocations per request and the proxied CPU over the direct one. The
// figures of a measured run, with the machine and the command, are in docs/performance.md.
//
// # The virtual link
//
// StartVirtual runs the same model over a vnet.Network, an in-memory network,
// for runs inside a testing/synctest bubble, whose clock advances only when
// every goroutine waits: there no socket, timerfd or spinning clock can run,
// and none is needed, because a Go timer fires exactly at its instant and a
// chunk read at an instant was sent at that instant. Each direction of a link
// has one reader goroutine, and one event loop per proxy (eventLoop: a heap
// keyed by due time and push order, and one goroutine sleeping on a timer
// until the earliest) writes each chunk, FIN and reset to its destination, so
// what happens at one instant happens in the order the link queued it. The
// model's parts are shared, not copied: every stage that times a direction
// (package stage: the delays and their seeded jitter, the sending model's
// departures, the order of data, FIN and reset), the listen queue
// (stage.ListenQueue) and the connection records (package conntrack). Where the
// kernel's listen queue drops SYNs, VirtualProxy.DialContext is the client
// kernel's connect with its SYN retries. A thousand reused requests at 50 ms
// take about 5 ms of real time (BenchmarkVirtualLinkRequests).
//
// # Other platforms
//
// The timerfd clock and the kernel receive stamps are Linux's. Elsewhere
// (macOS, the BSDs, Windows) the clock sleeps on a Go timer until the
// spin window opens and yields for the whole window, and chunks are
// stamped when the reader runs; Windows also reads through net.Conn, so an
// idle link pins a 16 KiB buffer, and cannot read SO_ERROR, so a write
// racing a peer's reset is noticed at the next read. Setting
// KALAB_NETSIM_PORTABLE=1 gives Linux the same clock and stamping, which is
// how the cost was measured (the same VM, loaded; two runs each, given as
// ranges):
//
//	go test -run '^$' -bench ClockWake -benchtime 3x ./engine/netsim/clock
//	                  late p50   late p99   CPU per wake (2-6 ms waits)
//	timerfd           6.6 µs     1.0 ms     0.35 ms
//	fallback          4.4 µs     0.52 ms    0.90 ms
//
//	KALAB_NETSIM_PORTABLE=1 go test -run '^$' -bench 'ReusedRequest/rtt=50ms$' -benchtime 1x ./engine/netsim
//	                           vs model        proxy's share   CPU/req
//	reused, 50 ms, Linux       +1.07..+1.42%   +0.06..+0.62%   1.23..1.42 ms
//	reused, 50 ms, portable    +1.38..+1.43%   +0.45..+0.60%   2.48..2.54 ms
//
// So the portable path keeps the median as close to the model as the
// Linux path (the proxy's share under 1% at 50 ms RTT), at about twice the
// CPU per request, because every wait yields through the whole 1.5 ms
// window instead of its last 250 µs. The fallback's Go timer may fire up to
// a millisecond late; the window covers that. Measured on Linux only: the
// figures for a real macOS or Windows scheduler are not measured here.
package netsim
