// Package client sends a scenario's HTTP requests the way a chosen real client would and
// reports one Event per request.
//
// # Implementations
//
// New returns one of two implementations of the Client interface:
//
//   - "model" (the default): an HTTP/1.1 connection pool written for kalab over net.Conn and
//     tls.Conn, so every behaviour of a client profile is explicit: keep-alive on or off; an
//     idle timeout whose clock starts when the response's last byte arrived; the server's
//     Keep-Alive hint read the way Node's agent or undici reads it, minus a buffer (a result
//     <= 0 means the connection is not pooled); MaxConns per host with a FIFO wait queue;
//     lifo or fifo choice of the idle connection; a non-blocking liveness peek before reuse;
//     a per-attempt timeout; TLS session resumption; and visible retries (RetryPolicy).
//   - "go-net-http": the real net/http.Transport configured from the profile and traced with
//     net/http/httptrace. The Transport re-sends a replayable request that failed on a reused
//     connection on its own; GotConn fires once per try, so a second GotConn inside one
//     RoundTrip is counted as a hidden retry (Event.HiddenRetries, Stats.HiddenRetries).
//
// HTTP/2 (Config.HTTP2) always goes through the standard library: h2 by ALPN over TLS, or
// h2c with prior knowledge over plain TCP; each request is one stream (Stats.H2Streams).
// Options the standard library cannot honour (HonorHint, LivenessCheck, fifo) are rejected
// by New for go-net-http and HTTP/2 rather than silently ignored.
//
// # Hint rules
//
// With HonorHint, a pooled connection's idle lifetime is:
//
//	node:   hint = first match of ^timeout=(\d+) on the Keep-Alive value;
//	        life = hint - HintBuffer; <= 0: not pooled; else min(IdleTimeout if set, life)
//	undici: hint = first match of timeout=(\d+) anywhere in the value;
//	        life = hint - HintBuffer; <= 0: not pooled; else min(life, HintMax if set),
//	        replacing IdleTimeout (undici's keepAliveTimeout), as undici's client-h1.js does
//
// # Presets
//
// The presets users choose live in engine/scenario; this is what each resolves to here
// (docs/presets.md cites the sources). Unlisted fields are zero: no idle timeout, unlimited
// conns, no retry.
//
//	preset              impl         keep-alive  idle    hint (parser, buffer)     other
//	node-agent          model        yes         none    node, 1 s                 lifo
//	node-agent-default  model        no          -       -                         -
//	node-global-agent   model        yes         5 s     node, 1 s                 lifo
//	undici              model        yes         4 s     undici, 2 s, max 600 s    fifo (first free client)
//	go-default          go-net-http  yes         90 s    not read                  2 idle per host
//	python-requests     model        yes         none    not read                  10 idle, lifo, liveness check
//	curl-loop           model        no          -       -                         -
//	curl-multi          model        yes         118 s   not read                  liveness check, lifo (unverified),
//	                                                                               5 re-sends on reset/eof, reused conn, 0 bytes
//
// # Error classes
//
// Classify maps errors to classes: ECONNREFUSED is refused; ECONNRESET or EPIPE is reset; a
// deadline is timeout; a TLS alert or certificate error is tls; io.EOF or
// io.ErrUnexpectedEOF before a complete response is eof (Node's "socket hang up", undici's
// "other side closed"); anything else is other. Event.Error keeps the original text,
// wrapped with what the client was doing.
//
// # Performance
//
// The model client's own CPU cost, plain HTTP/1.1, keep-alive, 64 requests in flight against
// a minimal raw HTTP server that runs in a separate process (nginx is not installed here), so
// getrusage(RUSAGE_SELF) counts the client alone:
//
//	go test -run '^$' -bench . -benchtime 300000x ./engine/client
//
//	BenchmarkModelKeepAlive64       14.1-20.1 cpu-µs/req  38-52k req/s  0 B/op  0 allocs/op
//	BenchmarkGoNetHTTPKeepAlive64   36.8-60.1 cpu-µs/req  18-25k req/s  ~3.5 kB/op  49 allocs/op
//
// Machine: 2 CPUs (nproc 2), AMD EPYC (x86_64, "Oxide Virtual Turin-like Processor" to Go),
// Linux, Go 1.26.8, measured while other sessions built and tested on the same box (load
// average 3-7), which is why the range is wide: 14.1 in the quietest run, 17-20 under load,
// so the 15 µs target is met only on a quiet machine. A CPU profile puts about 77% of the
// model client's time inside the write and read system calls (the kernel's loopback TCP
// path, charged to the sender); the client's own Go code is a few per cent. The Go
// Transport costs 2.5-3x more on the same run. The pool allocates nothing per request, so
// its memory does not grow with the request count (TestPoolStaysBounded checks the pool
// holds no more connections than were in flight).
//
// What go-net-http can cost is bounded by net/http itself: BenchmarkGoNetHTTPVsModel
// alternates it with the model client and with two loops that contain no kalab code, a
// plain http.Client and the Transport's RoundTrip called directly (64 connections kept
// alive, 64 in flight, the same server). Three runs on 2026-12-01 07:54 UTC, load average
// 1.8-2.6, each the median of 5 rounds of 20,000 requests:
//
//	go test -run '^$' -bench GoNetHTTPVsModel -benchtime 1x ./engine/client
//
//	go-net-http              24.5-24.9 cpu-µs/req   35 allocs/op  2.4 kB/op
//	bare http.Client         25.8-26.1              42 allocs/op  3.1 kB/op
//	bare Transport.RoundTrip 24.4-24.7
//	model client             9.0-9.2                 0 allocs/op
//
// go-net-http is 0.95-0.97x the bare http.Client and 1.00-1.03x the bare RoundTrip (it was
// 1.02-1.07x before it kept its request with its reused trace): what is left is the
// Transport's own cost, so no client driving net/http.Transport gets much below 24 µs per
// request on this machine.
package client
