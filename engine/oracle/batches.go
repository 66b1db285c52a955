package oracle

import (
	"fmt"
	"time"
)

// batches predicts a closed-model run whose bursts go out all at once (burst ≤
// concurrency): the first batch dials one connection per request; each later batch finds the
// connections the pool kept (its max_idle, or none when the pauses outlast an idle limit)
// and dials the rest. Scheduling can only lower the count (a request that starts late
// finds a connection another of its batch returned), so connections is an upper bound.
func batches(p Plan, lateness time.Duration) Prediction {
	names := singleHop
	keep := clientKeep(p.Client, p.Server)
	if p.Client.MaxConns > 0 && p.Client.MaxConns < min(p.Burst, p.Concurrency) {
		return notPredicted(names, "client.max_conns is below the batch: which request waits for which connection depends on response order", lateness)
	}
	kept, why := batchKept(p, keep, lateness)
	if why != "" {
		return notPredicted(names, why, lateness)
	}
	n, prev := 0, 0
	for start := 0; start < p.Requests; start += p.Burst {
		size := min(p.Burst, p.Requests-start)
		n += max(0, size-min(kept, prev))
		prev = size
	}
	out := Prediction{Rule: "batches", LatenessMs: ms(lateness)}
	zero := "no pause comes within a round trip of an idle close: nothing races"
	out.Counts = []Count{
		exact(Errors, 0, zero),
		{Metric: Connections, Predicted: true, Value: n, Lo: 0, Hi: n, AtMost: true,
			Reason: fmt.Sprintf("the first batch dials %d; each later one finds the %d the pool kept and dials the rest; a late start can only lower this (Go's dial race, a connection returned early)", min(p.Burst, p.Requests), kept)},
		{Metric: ReusedRequests, Reason: "the complement of connections, which scheduling can only lower"},
		exact(Retries, 0, zero),
		exact(HiddenRetries, 0, zero),
	}
	return out
}

// batchKept is how many connections survive a pause between batches, or why that depends
// on timing.
func batchKept(p Plan, keep, lateness time.Duration) (int, string) {
	kept := min(p.Burst, p.Concurrency)
	if p.Client.MaxIdle > 0 {
		kept = min(kept, p.Client.MaxIdle)
	}
	if p.Server.MaxRequests > 0 {
		return 0, "server.max_requests with requests in flight: which connection reaches its limit first depends on order"
	}
	if len(p.Pauses) == 0 {
		return kept, ""
	}
	lo, hi := slicesMinMax(p.Pauses)
	lo, hi = lo-lateness, hi+lateness
	if s := p.Server.IdleTimeout; s > 0 && hi > s-p.RTT {
		return 0, fmt.Sprintf("a pause up to %s comes within a round trip of the server's %s close with %d connections idle: which of them race depends on order", fmtD(hi), fmtD(s), kept)
	}
	switch {
	case keep > 0 && lo >= keep:
		return 0, ""
	case keep > 0 && hi >= keep:
		return 0, fmt.Sprintf("the pauses (%s to %s) straddle the client's %s idle limit", fmtD(lo), fmtD(hi), fmtD(keep))
	}
	return kept, ""
}

func slicesMinMax(ds []time.Duration) (lo, hi time.Duration) {
	lo, hi = ds[0], ds[0]
	for _, d := range ds {
		lo, hi = min(lo, d), max(hi, d)
	}
	return lo, hi
}
