package metrics

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

func ok(seq int, lat time.Duration, conn uint64, reused bool) client.Event {
	return client.Event{Seq: seq, Latency: lat, ConnID: conn, Reused: reused, Attempts: 1, Status: 200}
}

func fail(seq int, class client.ErrorClass) client.Event {
	return client.Event{Seq: seq, Latency: time.Millisecond, Attempts: 1, Class: class, Error: string(class)}
}

func TestClassCounting(t *testing.T) {
	t.Parallel()
	a := New()
	want := map[client.ErrorClass]int64{}
	seq := 0
	for i, c := range client.Classes {
		for range i + 1 { // reset 1, eof 2, timeout 3, refused 4, tls 5, other 6
			a.Add(fail(seq, c))
			seq++
			want[c]++
		}
	}
	a.Add(fail(seq, "weird")) // an unknown class is still a failure, counted as other
	want[client.ClassOther]++
	for range 10 {
		seq++
		a.Add(ok(seq, time.Millisecond, 1, true))
	}
	s := a.Summary(time.Second, 1)
	if s.Requests != 32 || s.OK != 10 || s.Errors != 22 {
		t.Fatalf("requests/ok/errors = %d/%d/%d, want 32/10/22", s.Requests, s.OK, s.Errors)
	}
	for _, c := range client.Classes {
		if s.ByClass[c] != want[c] {
			t.Errorf("class %q: %d, want %d", c, s.ByClass[c], want[c])
		}
	}
	if got, w := s.ErrorsPer1000, 22.0*1000/32; math.Abs(got-w) > 1e-9 {
		t.Errorf("errors_per_1000 = %v, want %v", got, w)
	}
	f := s.Flat()
	if f["errors_by_class.other"] != 7 || f["errors_by_class.reset"] != 1 || f["errors_by_class.tls"] != 5 {
		t.Errorf("flat classes wrong: %v", f)
	}
}

func TestReuseRetriesConnections(t *testing.T) {
	t.Parallel()
	a := New()
	// Connection 1 carries 4 requests (1 new + 3 reused), connection 2 carries 2,
	// connection 1<<40 (a sparse id) carries 1, and one request never got a connection.
	a.Add(ok(0, 3*time.Millisecond, 1, false))
	a.Add(ok(1, time.Millisecond, 1, true))
	a.Add(ok(2, time.Millisecond, 1, true))
	a.Add(ok(3, time.Millisecond, 1, true))
	a.Add(ok(4, 3*time.Millisecond, 2, false))
	a.Add(client.Event{Seq: 5, Latency: time.Millisecond, ConnID: 2, Reused: true, Attempts: 3, HiddenRetries: 1, Status: 200})
	a.Add(client.Event{Seq: 6, Latency: time.Millisecond, ConnID: 1 << 40, Attempts: 2, Status: 200})
	a.Add(client.Event{Seq: 7, Latency: time.Millisecond, Attempts: 1, Class: client.ClassRefused, HiddenRetries: 2})
	s := a.Summary(time.Second, 1)
	if s.Connections != 3 {
		t.Errorf("connections = %d, want 3 distinct ids", s.Connections)
	}
	if s.Reused != 4 {
		t.Errorf("reused = %d, want 4", s.Reused)
	}
	if s.ReuseRatio != 0.5 {
		t.Errorf("reuse ratio = %v, want 4/8", s.ReuseRatio)
	}
	if s.Retries != 3 {
		t.Errorf("retries = %d, want (3-1)+(2-1)", s.Retries)
	}
	if s.HiddenRetries != 3 {
		t.Errorf("hidden retries = %d, want 3", s.HiddenRetries)
	}
	f := s.Flat()
	if f["connections"] != 3 || f["reused_requests"] != 4 || f["reuse_ratio"] != 0.5 || f["retries"] != 3 || f["hidden_retries"] != 3 {
		t.Errorf("flat = %v", f)
	}
}

func TestScaleDivision(t *testing.T) {
	t.Parallel()
	a := New()
	// Measured at time scale 0.1: a 15 ms round trip stands for 150 ms of scenario time.
	for i := range 100 {
		a.Add(ok(i, 15*time.Millisecond+time.Duration(i)*10*time.Microsecond, 1, i > 0))
	}
	raw := a.Summary(2*time.Second, 1)
	scaled := a.Summary(2*time.Second, 0.1)
	pairs := []struct {
		name     string
		raw, got time.Duration
	}{
		{"min", raw.Latency.Min, scaled.Latency.Min},
		{"p50", raw.Latency.P50, scaled.Latency.P50},
		{"p99", raw.Latency.P99, scaled.Latency.P99},
		{"max", raw.Latency.Max, scaled.Latency.Max},
		{"mean", raw.Latency.Mean, scaled.Latency.Mean},
		{"total", raw.Total, scaled.Total},
	}
	for _, p := range pairs {
		if d := p.got - 10*p.raw; d < -time.Nanosecond*10 || d > 10*time.Nanosecond {
			t.Errorf("%s at scale 0.1 = %v, want 10 x %v", p.name, p.got, p.raw)
		}
	}
	if scaled.Latency.Min != 150*time.Millisecond {
		t.Errorf("scaled min = %v, want 150ms", scaled.Latency.Min)
	}
	if f := scaled.Flat(); f["total_ms"] != 20000 || math.Abs(f["rps"]-5) > 1e-9 || f["latency_ms.min"] != 150 {
		t.Errorf("scaled flat total_ms=%v rps=%v min=%v, want 20000, 5, 150", f["total_ms"], f["rps"], f["latency_ms.min"])
	}
	if raw.Scale != 1 || scaled.Scale != 0.1 {
		t.Errorf("summaries record scale %v and %v", raw.Scale, scaled.Scale)
	}
	// Counts never scale.
	if scaled.Requests != raw.Requests || scaled.Reused != raw.Reused {
		t.Error("scale changed a count")
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if s := a.Summary(2*time.Second, bad); s.Total != raw.Total || s.Latency != raw.Latency || s.Scale != 1 {
			t.Errorf("scale %v: got total %v latency %+v, want the unscaled figures", bad, s.Total, s.Latency)
		}
	}
}

func TestSummaryLatencies(t *testing.T) {
	t.Parallel()
	a := New()
	rng := rand.New(rand.NewPCG(7, 7))
	var lat []time.Duration
	for i := range 20000 {
		d := time.Duration(150e6 * math.Exp(0.3*rng.NormFloat64()))
		lat = append(lat, d)
		a.Add(ok(i, d, 1, true))
	}
	slices.Sort(lat)
	s := a.Summary(10*time.Second, 1)
	for _, c := range []struct {
		name string
		got  time.Duration
		q    float64
	}{{"p50", s.Latency.P50, 0.5}, {"p90", s.Latency.P90, 0.9}, {"p95", s.Latency.P95, 0.95}, {"p99", s.Latency.P99, 0.99}} {
		want := lat[int(math.Ceil(c.q*float64(len(lat))))-1]
		if rel := math.Abs(float64(c.got-want)) / float64(want); rel > 0.001 {
			t.Errorf("%s = %v, exact %v (%.4f%% off)", c.name, c.got, want, rel*100)
		}
	}
	if s.Latency.Min != lat[0] || s.Latency.Max != lat[len(lat)-1] {
		t.Errorf("min/max = %v/%v, want %v/%v", s.Latency.Min, s.Latency.Max, lat[0], lat[len(lat)-1])
	}
	f := s.Flat()
	if math.Abs(f["latency_ms.p50"]-float64(s.Latency.P50)/1e6) > 1e-9 || f["rps"] != 2000 || f["total_ms"] != 10000 {
		t.Errorf("flat latency/rps/total = %v/%v/%v", f["latency_ms.p50"], f["rps"], f["total_ms"])
	}
}

// vocabulary is the metric key list (docs/reference/metrics.md) that metrics owns.
var vocabulary = []string{
	"requests", "ok", "errors", "errors_per_1000",
	"errors_by_class.reset", "errors_by_class.eof", "errors_by_class.timeout",
	"errors_by_class.refused", "errors_by_class.tls", "errors_by_class.other",
	"retries", "hidden_retries", "connections", "reused_requests", "reuse_ratio",
	"latency_ms.min", "latency_ms.p50", "latency_ms.p90", "latency_ms.p95",
	"latency_ms.p99", "latency_ms.max", "latency_ms.mean", "total_ms", "rps", "status_5xx",
}

func TestFlatKeysAndEmpty(t *testing.T) {
	t.Parallel()
	f := New().Summary(0, 1).Flat()
	var keys []string
	for k, v := range f {
		keys = append(keys, k)
		if v != 0 || math.IsNaN(v) {
			t.Errorf("empty run: %s = %v, want 0", k, v)
		}
	}
	slices.Sort(keys)
	want := slices.Sorted(slices.Values(vocabulary))
	if !slices.Equal(keys, want) {
		t.Fatalf("Flat keys = %v\nwant %v", keys, want)
	}
	if !slices.Equal(FlatKeys(), want) {
		t.Fatalf("FlatKeys() = %v\nwant %v", FlatKeys(), want)
	}
}

func TestConcurrentAdd(t *testing.T) {
	t.Parallel()
	a := New()
	const workers, each = 8, 5000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e := ok(w*each+i, time.Duration(i+1)*time.Microsecond, uint64(w+1), i > 0)
				if i%100 == 0 {
					e = fail(w*each+i, client.ClassReset)
				}
				a.Add(e)
				if i%1000 == 0 {
					a.Summary(time.Second, 1) // readers while writers run
					a.Progress()
				}
			}
		}()
	}
	wg.Wait()
	s := a.Summary(time.Second, 1)
	if s.Requests != workers*each || s.Errors != workers*each/100 || s.Connections != workers {
		t.Fatalf("requests/errors/connections = %d/%d/%d, want %d/%d/%d",
			s.Requests, s.Errors, s.Connections, workers*each, workers*each/100, workers)
	}
	if r, e := a.Progress(); r != s.Requests || e != s.Errors {
		t.Fatalf("Progress = %d, %d; want %d, %d", r, e, s.Requests, s.Errors)
	}
}

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryFlat proves the aggregator's memory does not grow with the number of
// requests: the live heap after 1e6 Adds is the same as after 1e4, and a warmed-up
// Add allocates nothing. Not parallel, so no other test's garbage is counted.
func TestMemoryFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	event := func(i int) client.Event {
		// Latencies from 50 us to 20 s, 64 connections, a few errors: a wide run.
		e := ok(i, time.Duration(50e3*math.Pow(10, 5.6*rng.Float64())), uint64(i%64+1), i >= 64)
		if i%97 == 0 {
			e.Class = client.ClassEOF
		}
		return e
	}
	before := liveHeap()
	a := New()
	for i := range 10_000 {
		a.Add(event(i))
	}
	small := liveHeap()
	for i := 10_000; i < 1_000_000; i++ {
		a.Add(event(i))
	}
	large := liveHeap()
	runtime.KeepAlive(a)
	t.Logf("aggregator live heap: %d B after 1e4 Adds, %d B after 1e6", small-before, large-before)
	if grew := int64(large) - int64(small); grew > 32<<10 {
		t.Fatalf("live heap grew %d B between 1e4 and 1e6 Adds; want flat", grew)
	}
	if total := large - before; total > 512<<10 {
		t.Fatalf("aggregator holds %d B after 1e6 Adds; want under 512 KiB", total)
	}
	e := event(1)
	if n := testing.AllocsPerRun(10_000, func() { a.Add(e) }); n != 0 {
		t.Fatalf("Add allocates %v times per call after warm-up, want 0", n)
	}
	if s := a.Summary(time.Minute, 1); s.Requests != 1_000_000+10_001 || s.Connections != 64 {
		t.Fatalf("requests/connections = %d/%d", s.Requests, s.Connections)
	}
}

// TestConnSetCost bounds the one structure that grows with connections (not
// requests): a run with no reuse, 1e6 requests on 1e6 new connections.
func TestConnSetCost(t *testing.T) {
	before := liveHeap()
	var c connSet
	for id := uint64(1); id <= 1_000_000; id++ {
		c.add(id)
		c.add(id) // a second request on the same connection is not a new one
	}
	after := liveHeap()
	runtime.KeepAlive(&c)
	if c.n != 1_000_000 {
		t.Fatalf("counted %d connections, want 1e6", c.n)
	}
	t.Logf("connection set: %d B for 1e6 connection ids", after-before)
	if after-before > 256<<10 {
		t.Fatalf("connection set holds %d B for 1e6 ids; want about 1 bit each", after-before)
	}
}

// A balancer's 502 is a response, not a socket error: it counts in status_5xx only.
func TestStatus5xx(t *testing.T) {
	t.Parallel()
	a := New()
	a.Add(client.Event{Status: 200, Attempts: 1})
	a.Add(client.Event{Status: 502, Attempts: 1})
	a.Add(client.Event{Status: 503, Attempts: 1})
	a.Add(client.Event{Class: client.ClassReset, Attempts: 1})
	f := a.Summary(time.Second, 1).Flat()
	if f["status_5xx"] != 2 || f["errors"] != 1 || f["ok"] != 3 {
		t.Fatalf("status_5xx %v errors %v ok %v; want 2, 1, 3", f["status_5xx"], f["errors"], f["ok"])
	}
}
