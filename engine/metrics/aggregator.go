package metrics

import (
	"math"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// Aggregator folds a run's client events into counters and a latency histogram as
// they arrive. Add and Summary are safe for concurrent use, so the load goroutines
// can feed it directly.
type Aggregator struct {
	mu            sync.Mutex
	requests      int64
	ok            int64
	byClass       [len(classIndex)]int64
	retries       int64
	hiddenRetries int64
	reused        int64
	status5xx     int64
	bytesRead     int64
	conns         connSet
	latency       histogram
}

// classIndex gives each failure class a slot in Aggregator.byClass; unknown classes
// count as other.
var classIndex = [...]client.ErrorClass{
	client.ClassReset, client.ClassEOF, client.ClassTimeout,
	client.ClassRefused, client.ClassTLS, client.ClassOther,
}

const otherSlot = 5

func slotOf(c client.ErrorClass) int {
	for i, k := range classIndex {
		if k == c {
			return i
		}
	}
	return otherSlot
}

// New returns an empty Aggregator.
func New() *Aggregator { return &Aggregator{} }

// Add records one request's event. It allocates only when a latency of a new
// magnitude or a connection id in a new block of 4,096 first appears.
func (a *Aggregator) Add(e client.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	if e.OK() {
		a.ok++
	} else {
		a.byClass[slotOf(e.Class)]++
	}
	if e.Attempts > 1 {
		a.retries += int64(e.Attempts - 1)
	}
	if e.HiddenRetries > 0 {
		a.hiddenRetries += int64(e.HiddenRetries)
	}
	if e.Reused {
		a.reused++
	}
	if e.Status >= 500 {
		a.status5xx++
	}
	if e.BytesRead > 0 {
		a.bytesRead += e.BytesRead
	}
	if e.ConnID != 0 {
		a.conns.add(e.ConnID)
	}
	a.latency.record(e.Latency)
}

// Progress returns the requests and errors counted so far, cheaply enough to call
// from a progress display while the run is in flight.
func (a *Aggregator) Progress() (requests, errors int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests, a.requests - a.ok
}

// Latency holds latency statistics in scenario time.
type Latency struct {
	Min, P50, P90, P95, P99, Max, Mean time.Duration
}

// Summary is a run's aggregated metrics, in scenario time (measured durations are
// divided by the time scale).
type Summary struct {
	Requests      int64                       // events added
	OK            int64                       // events without an error class
	Errors        int64                       // Requests - OK
	ErrorsPer1000 float64                     // Errors per 1,000 requests
	ByClass       map[client.ErrorClass]int64 // failures per class; every class in client.Classes is present
	Retries       int64                       // visible retries: sum of Attempts-1
	HiddenRetries int64                       // re-sends done inside the client library
	Connections   int64                       // distinct non-zero ConnIDs that carried a request
	Reused        int64                       // requests whose final attempt went out on a reused connection
	Status5xx     int64                       // responses with a 5xx status (a balancer's 502 included)
	ReuseRatio    float64                     // Reused / Requests
	BytesRead     int64                       // response body bytes read, summed
	Latency       Latency                     // over every request, failed ones included
	Total         time.Duration               // the run's wall time, scaled
	RPS           float64                     // Requests per second of scaled total time
	Scale         float64                     // the time scale the durations were divided by
}

// Summary returns the metrics so far. total is the run's measured wall time and
// scale the plan's time scale: every duration is divided by it so the figures read
// in scenario time. A scale that is not a positive finite number counts as 1.
func (a *Aggregator) Summary(total time.Duration, scale float64) Summary {
	if !(scale > 0) || math.IsInf(scale, 0) {
		scale = 1
	}
	div := func(d uint64) time.Duration { return time.Duration(math.Round(float64(d) / scale)) }

	a.mu.Lock()
	defer a.mu.Unlock()
	s := Summary{
		Requests:      a.requests,
		OK:            a.ok,
		Errors:        a.requests - a.ok,
		ByClass:       make(map[client.ErrorClass]int64, len(classIndex)),
		Retries:       a.retries,
		HiddenRetries: a.hiddenRetries,
		Connections:   a.conns.n,
		Reused:        a.reused,
		Status5xx:     a.status5xx,
		BytesRead:     a.bytesRead,
		Scale:         scale,
	}
	for i, c := range classIndex {
		s.ByClass[c] = a.byClass[i]
	}
	if total > 0 {
		s.Total = div(uint64(total))
	}
	if a.requests > 0 {
		s.ErrorsPer1000 = float64(s.Errors) * 1000 / float64(a.requests)
		s.ReuseRatio = float64(a.reused) / float64(a.requests)
		q := a.latency.quantiles([]float64{0.5, 0.9, 0.95, 0.99})
		s.Latency = Latency{
			Min:  div(a.latency.min),
			P50:  div(q[0]),
			P90:  div(q[1]),
			P95:  div(q[2]),
			P99:  div(q[3]),
			Max:  div(a.latency.max),
			Mean: time.Duration(math.Round(a.latency.sum / float64(a.latency.count) / scale)),
		}
	}
	if s.Total > 0 {
		s.RPS = float64(a.requests) / s.Total.Seconds()
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Flat returns the summary keyed by the metric vocabulary (docs/reference/metrics.md), times in
// milliseconds, for assertions and the results file.
func (s Summary) Flat() map[string]float64 {
	m := map[string]float64{
		"requests":        float64(s.Requests),
		"ok":              float64(s.OK),
		"errors":          float64(s.Errors),
		"errors_per_1000": s.ErrorsPer1000,
		"retries":         float64(s.Retries),
		"hidden_retries":  float64(s.HiddenRetries),
		"connections":     float64(s.Connections),
		"reused_requests": float64(s.Reused),
		"reuse_ratio":     s.ReuseRatio,
		"status_5xx":      float64(s.Status5xx),
		"latency_ms.min":  ms(s.Latency.Min),
		"latency_ms.p50":  ms(s.Latency.P50),
		"latency_ms.p90":  ms(s.Latency.P90),
		"latency_ms.p95":  ms(s.Latency.P95),
		"latency_ms.p99":  ms(s.Latency.P99),
		"latency_ms.max":  ms(s.Latency.Max),
		"latency_ms.mean": ms(s.Latency.Mean),
		"total_ms":        ms(s.Total),
		"rps":             s.RPS,
	}
	for _, c := range client.Classes {
		m["errors_by_class."+string(c)] = float64(s.ByClass[c])
	}
	return m
}

// FlatKeys lists every key Flat returns, sorted, so an assertion compiler can reject
// an unknown metric name before anything runs.
func FlatKeys() []string {
	return []string{
		"connections", "errors",
		"errors_by_class.eof", "errors_by_class.other", "errors_by_class.refused",
		"errors_by_class.reset", "errors_by_class.timeout", "errors_by_class.tls",
		"errors_per_1000", "hidden_retries",
		"latency_ms.max", "latency_ms.mean", "latency_ms.min", "latency_ms.p50",
		"latency_ms.p90", "latency_ms.p95", "latency_ms.p99",
		"ok", "requests", "retries", "reuse_ratio", "reused_requests", "rps", "status_5xx", "total_ms",
	}
}

// connSet counts distinct connection ids. Clients number connections 1, 2, 3, ...,
// so a bitmap in blocks of 4,096 ids costs one bit per connection: it grows with the
// connections a run opens, never with the requests they carry.
type connSet struct {
	blocks map[uint64]*[64]uint64
	n      int64
}

func (c *connSet) add(id uint64) {
	if c.blocks == nil {
		c.blocks = make(map[uint64]*[64]uint64)
	}
	b := c.blocks[id>>12]
	if b == nil {
		b = new([64]uint64)
		c.blocks[id>>12] = b
	}
	w, bit := (id>>6)&63, uint64(1)<<(id&63)
	if b[w]&bit == 0 {
		b[w] |= bit
		c.n++
	}
}
