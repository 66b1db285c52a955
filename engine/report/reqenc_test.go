package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
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
			if rng.IntN(2) == 0 {
				at, wait := pick(floats), []float64{0, pick(floats)}[rng.IntN(2)]
				r.ScheduledMs, r.QueueWaitMs = &at, &wait
			}
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
			if err := enc.Encode(&reqs[i%len(reqs)]); err != nil {
				b.Fatal(err)
			}
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

// TestRequestEncodingWritesEveryField builds a Request by reflection with every field set,
// then with each field alone set, and holds appendRequest to encoding/json on each: a field
// added to Request that the hand-written encoder does not write fails here, whatever its
// name (scheduled_ms and queue_wait_ms went unwritten while a test sampled the others).
func TestRequestEncodingWritesEveryField(t *testing.T) {
	t.Parallel()
	n := reflect.TypeFor[Request]().NumField()
	check := func(what string, r *Request) {
		t.Helper()
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendRequest(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	var all Request
	for i := range n {
		setField(t, reflect.ValueOf(&all).Elem().Field(i), i)
		var one Request
		setField(t, reflect.ValueOf(&one).Elem().Field(i), i)
		check(reflect.TypeFor[Request]().Field(i).Name+" alone", &one)
	}
	check("every field", &all)
}

// setField sets v to a value that is not its zero value and that encoding/json writes
// (i varies it between fields); a kind it does not know fails the test, so a new field
// of a new type gets a value here rather than being left out.
func setField(t *testing.T, v reflect.Value, i int) {
	t.Helper()
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(i + 1))
	case reflect.Uint64:
		v.SetUint(uint64(i + 1))
	case reflect.Float64:
		v.SetFloat(float64(i) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString(fmt.Sprintf("s<%d>", i))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		setField(t, p.Elem(), i)
		v.Set(p)
	default:
		t.Fatalf("field %s of kind %s: give it a value here", v.Type(), v.Kind())
	}
}
