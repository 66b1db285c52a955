// Package metrics folds a run's client events into the metric vocabulary (docs/reference/metrics.md)
// with memory that does not grow with the number of requests, and probes the
// process's CPU time and peak RSS.
//
// # Latency percentiles
//
// Latencies go into a log-linear histogram (HDR-like), not an exact sorted list:
// values below 2,048 ns are counted exactly, and every power of two above is split
// into 1,024 equal buckets. A percentile is the nearest-rank value (the smallest
// latency at or above which the given share of requests lies), read as its bucket's
// midpoint and clamped to the exact min and max, so it is within 0.049% of the exact
// order statistic (the issue allows 0.1%). Min, max and mean are exact. Failed
// requests count in the latencies too: their latency is the time to the failure.
//
// # Memory
//
// Add takes a mutex, allocates nothing once warm, and keeps counters, histogram
// pages of 1,024 counters allocated on first use (440 KiB at most, about 50 KiB for
// latencies spanning 50 µs to 20 s), and a bitmap of connection ids. The bitmap is
// the one part that grows, with connections rather than requests: about 1 bit per
// connection (135 KB for 1e6 connections in TestConnSetCost), assuming the client
// numbers connections densely. TestMemoryFlat shows the live heap identical after
// 1e4 and 1e6 Adds (165 KB including the test's own state).
//
// # Process probe
//
// ProcProbe reads CPU time from getrusage(RUSAGE_SELF) and the resident set size
// from /proc/self/statm (the pages status reports as VmRSS): at the window's start
// and end, and in between from the process's one sampler, which serves every probe
// in flight at the shortest interval any asked for (20 ms by default). A run's
// peak_rss_mb is the highest of those samples while it ran; both figures are
// process-wide, so overlapping runs see each other.
//
// # Performance
//
// go test -run '^$' -bench . ./engine/metrics on 2 cores (AMD EPYC, "Oxide Virtual
// Turin-like Processor", nproc 2, Linux, Go 1.26.8), two runs on a machine shared
// with other builds:
//
//	BenchmarkAdd             24-25 ns/op     0 allocs/op
//	BenchmarkAddParallel     26-31 ns/op     0 allocs/op (both cores contending)
//	BenchmarkSummary        6.7-8.9 µs/op   13 allocs/op (after 1e5 events, Flat included)
//	BenchmarkMillionAdds     44-48 ms per 1e6 Adds, 50 KB live heap afterwards
//	BenchmarkProbeSample     9.3 µs/op      (one RSS sample from statm, load 11, 2026-12-02)
//	BenchmarkProbeSampleStatus 106 µs/op    (the same from status, as an earlier sampler read it)
package metrics
