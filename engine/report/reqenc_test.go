package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"testing"
)

// sampleRequests covers every field set and unset, numbers in both of encoding/json's
// forms, and strings that need each escape.
func sampleRequests(n int, seed uint64) []Request {
	rng := rand.New(rand.NewPCG(seed, 1))
	floats := []float64{0, 1, 0.5, 12.345678, 1e-7, 3.2e-9, 1e21, 123456789.123, -4.5, 1e20, 0.000001, math.SmallestNonzeroFloat64, math.MaxFloat64}
	strs := []string{"", "reset", "read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer", "<a&b>", "quote \" back \\ slash",
		"ctl \b\f\n\r\t\x00\x1f", "utf-8 é ✓ 𝄞", "bad \xff\xfe utf-8", "sep \u2028 \u2029", "ECONNRESET"}
	pick := func(xs []float64) float64 {
		if rng.IntN(3) == 0 {
			return rng.Float64() * math.Pow(10, float64(rng.IntN(30)-12))
		}
		return xs[rng.IntN(len(xs))]
	}
	out := make([]Request, n)
	for i := range out {
		r := Request{Seq: rng.IntN(1 << 30), StartMs: pick(floats), LatencyMs: pick(floats), Conn: rng.Uint64(),
			Reused: rng.IntN(2) == 0, Attempts: rng.IntN(4), Status: []int{0, 200, 503}[rng.IntN(3)], Bytes: rng.Int64N(1 << 40)}
		if rng.IntN(2) == 0 {
			r.HiddenRetries = rng.IntN(3)
			r.Class, r.Error, r.Code = strs[rng.IntN(len(strs))], strs[rng.IntN(len(strs))], strs[rng.IntN(len(strs))]
			r.ConnectMs, r.TLSMs, r.FirstByteMs = pick(floats), pick(floats), pick(floats)
			r.ServerConn = uint64(rng.IntN(3))
			if rng.IntN(2) == 0 {
				f := pick(floats)
				r.ServerClosedMs = &f
			}
			r.ServerCloseReason = strs[rng.IntN(len(strs))]
			r.BackendConn, r.BackendAttempts, r.BackendReused = uint64(rng.IntN(3)), rng.IntN(3), rng.IntN(2) == 0
			r.Client = strs[rng.IntN(len(strs))]
		}
		out[i] = r
	}
	return out
}

func TestRequestEncodingMatchesJSON(t *testing.T) {
	t.Parallel()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	var got []byte
	for i, r := range sampleRequests(20000, 7) {
		want.Reset()
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
		var err error
		if got, err = appendRequest(got[:0], &r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("request %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		r := Request{LatencyMs: f}
		if _, err := appendRequest(nil, &r); err == nil {
			t.Errorf("latency %v encoded; encoding/json refuses it", f)
		}
	}
}

func TestRequestEncodingAllocatesNothing(t *testing.T) {
	reqs := sampleRequests(64, 3)
	buf := make([]byte, 0, 4096)
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		buf, _ = appendRequest(buf[:0], &reqs[i%len(reqs)])
		i++
	}); n != 0 {
		t.Errorf("%v allocations a line", n)
	}
}

// BenchmarkRequestLine compares a line's cost through encoding/json (what the writer used
// before) and through appendRequest; ns/op × 1M is the cost of a 1M-request file.
func BenchmarkRequestLine(b *testing.B) {
	reqs := sampleRequests(1024, 5)
	for i := range reqs { // the common line: a reused request that succeeded
		if i%16 != 0 {
			reqs[i] = Request{Seq: i, StartMs: float64(i) * 1.234, LatencyMs: 51.372, Conn: uint64(i % 64), Reused: true, Attempts: 1, Status: 200, Bytes: 13, FirstByteMs: 51.2, ServerConn: uint64(i % 64)}
		}
	}
	b.Run("encoding-json", func(b *testing.B) {
		bw := bufio.NewWriterSize(io.Discard, 64<<10)
		enc := json.NewEncoder(bw)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			enc.Encode(&reqs[i%len(reqs)])
		}
	})
	b.Run("append", func(b *testing.B) {
		bw := bufio.NewWriterSize(io.Discard, 64<<10)
		buf := make([]byte, 0, 512)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			buf, _ = appendRequest(buf[:0], &reqs[i%len(reqs)])
			bw.Write(buf)
		}
	})
}
