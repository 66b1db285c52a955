// Package load turns a scenario's load section into a seeded request schedule and
// drives it: count, concurrency, bursts with pauses, and open-model arrival rates.
//
// # Semantics
//
// Requests are numbered 0..Requests-1 in the order they are issued. In the closed
// model (Rate 0) Concurrency calls are in flight at most (0 or 1: sequential;
// Concurrency == Requests: all at once). With Burst > 0 the run is cut into bursts;
// the pause before the next burst starts when the burst's last call has returned,
// as in the stale-connection race of keepalive-node-rtt-and-stale-race.txt (bursts
// of 10, pauses drawn from 1.5 to 2.5 s), and no pause follows the last burst.
// In the open model (Rate > 0) request i of a burst is due i/Rate after the burst
// starts (evenly spaced) or after a sum of exponential gaps (Poisson); the first
// request of each burst is due at once. Concurrency caps in-flight calls (0 means no
// cap); a due call that finds the cap reached waits for a slot, and later calls keep
// their own due times, so a slow spell is caught up rather than shifting the rest.
//
// # Randomness
//
// Every draw comes from a math/rand/v2 PCG generator seeded with Spec.Seed: pauses
// from one stream and Poisson gaps from another, so enabling Poisson arrivals does
// not change the pause sequence. Pauses and Arrivals return exactly what Run uses.
// Durations arrive already scaled; the package knows nothing of time scale.
//
// # Performance
//
// go test -run '^$' -bench . ./engine/load on 2 cores (AMD EPYC, "Oxide Virtual
// Turin-like Processor", nproc 2, Linux, Go 1.26.8), with a call that does nothing,
// two runs on a machine shared with other builds:
//
//	BenchmarkRunSequential     590-640 ns per request (one goroutine per call, 2 allocs)
//	BenchmarkRunConcurrent64   760-890 ns per request with 64 in flight
//	BenchmarkPauses            1.2-1.7 µs for the 99 pauses of 1,000 requests in bursts of 10
package load
