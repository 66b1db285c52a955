// Package gate decides whether a metric regressed against its baseline value: the
// direction each metric gets worse in, its default tolerance, the slack a tolerance allows
// at a run's time scale, and the verdict. engine/report/baseline applies it to whole runs.
//
// # Baselines
//
// A baseline is the results.jsonl of an earlier run. Each run is compared with the
// baseline run of the same scenario and variant, metric by metric, under a Rule: the
// direction in which the metric gets worse and a tolerance. A metric that moves in its
// worse direction by more than the tolerance is a regression: a failed check of kind
// "baseline" on the run. Moving the other way by more than the tolerance is an
// improvement, reported and recorded, never failed. Tolerances are the defaults below,
// overridden by a scenario file's baseline: block, overridden by --tolerance flags.
//
// Defaults: counts (errors, errors_by_class.*, retries, hidden_retries, failed_attempts, connections,
// server_connections, proxy_connections, tls_handshakes; reused_requests downward) +2
// absolute, widened to 3*sqrt(baseline) because race counts are Poisson-like; reuse_ratio
// -0.02; requests must not change; latency_ms.p50 +20% and mean +30%, with floors of 3
// and 5 ms of real time (divided by the time scale, since scheduler noise does not shrink
// with it); total_ms +15% with a floor of 5 ms of real time per request; rps -15% with the
// floor that follows from total_ms. Shown but off unless a file or flag sets a tolerance:
// latency_ms.p90/p95/p99/min/max (reused and new requests make latency bimodal, so tail
// percentiles jump between the modes), ok, errors_per_1000, cpu_us_per_request and
// peak_rss_mb (parallel runs share one process); tls_resumed has no better direction.
// Floors apply to defaults and relative tolerances; an absolute tolerance written in a
// file or a flag is used exactly. Between two runs on the virtual clock the time floors
// do not apply (Rule.Exact): no scheduler moved their simulated times.
//
// A run of a real program (an exec client, or a real server) is gated on what the program
// decides (counts, errors, reuse), not on its timing: its total_ms, rps and latency_ms.*
// are shown, not gated, unless a file or a flag sets their tolerance (Rule.Source
// SourceRealProgram), since a program's start-up and its runtime move them from run to
// run; a file compares them with its model's in the same invocation instead.
//
// The figures come from five runs of the default suite (kalab run scenarios --time-scale
// 0.1, four runs in parallel) on a 2-core AMD EPYC (engine/report/baseline names it), compared
// pairwise both ways. Between quiet runs p50 moved up to 26% (http2-burst, 5,000 requests at once), p90 up to 108%,
// p99 up to 155%, total_ms up to 58% at 1 ms RTT (1.9 ms real per request), errors 16 vs
// 15, connections 67 vs 65; with the defaults only http2-burst (whose counts depend on a
// CPU race) regresses, and needs its own baseline: block. A run made while race-enabled
// tests loaded both cores moved p50 and totals by 20-80%: gate on a machine doing nothing
// else.
package gate
