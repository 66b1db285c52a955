package client

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// benchServerEnv makes the test binary run only the benchmark's HTTP server, in its own
// process, so the benchmark's getrusage counts the client's CPU alone.
const benchServerEnv = "KALAB_CLIENT_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		runBenchServer()
		return
	}
	os.Exit(m.Run())
}

// runBenchServer answers every request with a fixed 13-byte keep-alive response until its
// stdin closes (the parent exited) or 10 minutes pass.
func runBenchServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		buf := make([]byte, 1)
		os.Stdin.Read(buf)
		os.Exit(0)
	}()
	time.AfterFunc(10*time.Minute, func() { os.Exit(0) })
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nhello, kalab\n")
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReaderSize(c, 4096)
			for {
				// Requests carry no body: a head ends at an empty line.
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(bytes.TrimRight(line, "\r\n")) == 0 {
						break
					}
				}
				if _, err := c.Write(resp); err != nil {
					return
				}
			}
		}()
	}
}

// startBenchServer runs the server process and returns its address.
func startBenchServer(b *testing.B) string {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start bench server: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("read bench server address: %v", err)
	}
	return strings.TrimSpace(addr)
}

// benchAddrEnv points the benchmarks at a server already running (examples/bench runs
// them against nginx, beside wrk, hey and vegeta) instead of their own.
const benchAddrEnv = "KALAB_CLIENT_BENCH_ADDR"

// benchClient sends b.N requests with 64 in flight and reports the client process's CPU
// time per request.
func benchClient(b *testing.B, cfg Config) {
	cfg.Addr = os.Getenv(benchAddrEnv)
	if cfg.Addr == "" {
		cfg.Addr = startBenchServer(b)
	}
	b.ReportAllocs()
	cpu, wall := runClient(b, cfg, b.N, b.ResetTimer)
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
	b.ReportMetric(float64(b.N)/wall.Seconds(), "req/s")
}

// runClient makes a client of cfg, opens its 64 connections, calls started, then sends n
// requests with 64 in flight and returns the process's CPU time and the wall time they took.
func runClient(b *testing.B, cfg Config, n int, started func()) (cpu, wall time.Duration) {
	cfg.KeepAlive = true
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const inFlight = 64
	// Warm up: open the connections outside the measurement.
	var wg sync.WaitGroup
	for i := range inFlight {
		wg.Add(1)
		go func() { defer wg.Done(); c.Do(context.Background(), i) }()
	}
	wg.Wait()

	var next, failed atomic.Int64
	started()
	cpu0, wall0 := lag.ProcessCPU(), time.Now()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if ev := c.Do(context.Background(), int(i)); !ev.OK() {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	cpu, wall = lag.ProcessCPU()-cpu0, time.Since(wall0)
	if k := failed.Load(); k > 0 {
		b.Fatalf("%d of %d requests failed", k, n)
	}
	// Go's Transport may dial past the in-flight count (a dial races an idle hand-back);
	// the model pool must not.
	if st := c.Stats(); cfg.Implementation != ImplGoNetHTTP && st.Connections > inFlight {
		b.Fatalf("%d connections for %d in flight", st.Connections, inFlight)
	}
	return cpu, wall
}

// runBare is the peer with no kalab code at all: a plain net/http.Client over its own
// Transport, keeping 64 connections alive (MaxIdleConnsPerHost; the default of 2 would close
// the rest), each of 64 goroutines sending its own request, built once, and reading the
// body to the end. With roundTrip it calls the Transport's RoundTrip itself, as go-net-http
// does, skipping what http.Client adds (redirects, cookies, deadlines). It opens the
// connections, calls started, then sends n requests with 64 in flight and returns the
// process's CPU time and the wall time they took. What it costs is what any client that
// drives net/http.Transport pays at the least.
func runBare(b *testing.B, addr string, n int, roundTrip bool, started func()) (cpu, wall time.Duration) {
	const inFlight = 64
	tr := &http.Transport{MaxIdleConnsPerHost: inFlight}
	defer tr.CloseIdleConnections()
	var c interface {
		Do(*http.Request) (*http.Response, error)
	} = &http.Client{Transport: tr}
	if roundTrip {
		c = roundTripper{tr}
	}
	reqs := make([]*http.Request, inFlight)
	for i := range reqs {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		if err != nil {
			b.Fatal(err)
		}
		reqs[i] = req
	}
	var failed atomic.Int64
	do := func(req *http.Request) {
		resp, err := c.Do(req)
		if err != nil {
			failed.Add(1)
			return
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			failed.Add(1)
		}
		resp.Body.Close()
	}
	// Warm up: open the connections outside the measurement.
	var wg sync.WaitGroup
	for _, req := range reqs {
		wg.Add(1)
		go func() { defer wg.Done(); do(req) }()
	}
	wg.Wait()

	var next atomic.Int64
	started()
	cpu0, wall0 := lag.ProcessCPU(), time.Now()
	for _, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				do(req)
			}
		}()
	}
	wg.Wait()
	cpu, wall = lag.ProcessCPU()-cpu0, time.Since(wall0)
	if k := failed.Load(); k > 0 {
		b.Fatalf("%d of %d requests failed", k, n+inFlight)
	}
	return cpu, wall
}

// roundTripper sends a request straight through its Transport.
type roundTripper struct{ tr *http.Transport }

func (r roundTripper) Do(req *http.Request) (*http.Response, error) { return r.tr.RoundTrip(req) }

// BenchmarkGoNetHTTPVsModel measures go-net-http against the model client and against
// bare net/http (runBare: an http.Client, and the Transport's RoundTrip called directly)
// in the same run, alternating rounds of 20,000 requests each (64 in flight, the same
// server), so all four see the same machine. It reports the CPU per request of go-net-http
// and of both bare loops, and go-net-http's ratio to the model's (x-model), to the bare
// client's (x-bare) and to the bare RoundTrip's (x-bare-rt), as the median over the rounds
// with the min and max beside it. Run it with
// go test -run '^$' -bench GoNetHTTPVsModel -benchtime 1x ./engine/client
func BenchmarkGoNetHTTPVsModel(b *testing.B) {
	addr := os.Getenv(benchAddrEnv)
	if addr == "" {
		addr = startBenchServer(b)
	}
	const rounds, n = 5, 20000
	var model, std, bare, bareRT, ratio, xBare, xBareRT []float64
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / n }
	for range b.N {
		for range rounds {
			cm, _ := runClient(b, Config{Addr: addr}, n, func() {})
			cs, _ := runClient(b, Config{Addr: addr, Implementation: ImplGoNetHTTP}, n, func() {})
			cb, _ := runBare(b, addr, n, false, func() {})
			ct, _ := runBare(b, addr, n, true, func() {})
			m, s, r, t := us(cm), us(cs), us(cb), us(ct)
			model, std, bare, bareRT = append(model, m), append(std, s), append(bare, r), append(bareRT, t)
			ratio, xBare, xBareRT = append(ratio, s/m), append(xBare, s/r), append(xBareRT, s/t)
		}
	}
	report := func(v []float64, unit string) {
		slices.Sort(v)
		b.ReportMetric(v[len(v)/2], unit)
		b.ReportMetric(v[0], unit+"-min")
		b.ReportMetric(v[len(v)-1], unit+"-max")
	}
	b.ReportMetric(0, "ns/op")
	report(std, "go-net-http-cpu-µs/req")
	report(bare, "bare-net-http-cpu-µs/req")
	report(bareRT, "bare-roundtrip-cpu-µs/req")
	report(model, "model-cpu-µs/req")
	report(ratio, "x-model")
	report(xBare, "x-bare")
	report(xBareRT, "x-bare-rt")
}

// BenchmarkBareNetHTTPKeepAlive64 is runBare on its own, as benchClient runs the two
// implementations: examples/bench puts it beside them against nginx.
func BenchmarkBareNetHTTPKeepAlive64(b *testing.B) {
	addr := os.Getenv(benchAddrEnv)
	if addr == "" {
		addr = startBenchServer(b)
	}
	b.ReportAllocs()
	cpu, wall := runBare(b, addr, b.N, false, b.ResetTimer)
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
	b.ReportMetric(float64(b.N)/wall.Seconds(), "req/s")
}

func BenchmarkModelKeepAlive64(b *testing.B) { benchClient(b, Config{}) }

func BenchmarkGoNetHTTPKeepAlive64(b *testing.B) {
	benchClient(b, Config{Implementation: ImplGoNetHTTP})
}
