//go:build unix

// The benchmark counts the client's CPU with getrusage, which Windows lacks
// (engine/metrics cannot be used here: it imports this package).

package client

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	cpu0, wall0 := cpuTime(), time.Now()
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
	cpu, wall = cpuTime()-cpu0, time.Since(wall0)
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

// BenchmarkGoNetHTTPVsModel measures go-net-http against the model client in the same run,
// alternating rounds of 20,000 requests each (64 in flight, the same server), so both see
// the same machine. It reports go-net-http's CPU per request and its ratio to the model's,
// as the median over the rounds with the min and max beside it. Run it with
// go test -run '^$' -bench GoNetHTTPVsModel -benchtime 1x ./engine/client
func BenchmarkGoNetHTTPVsModel(b *testing.B) {
	addr := os.Getenv(benchAddrEnv)
	if addr == "" {
		addr = startBenchServer(b)
	}
	const rounds, n = 5, 20000
	var model, std, ratio []float64
	for range b.N {
		for range rounds {
			cm, _ := runClient(b, Config{Addr: addr}, n, func() {})
			cs, _ := runClient(b, Config{Addr: addr, Implementation: ImplGoNetHTTP}, n, func() {})
			m, s := float64(cm.Nanoseconds())/1e3/n, float64(cs.Nanoseconds())/1e3/n
			model, std, ratio = append(model, m), append(std, s), append(ratio, s/m)
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
	report(model, "model-cpu-µs/req")
	report(ratio, "x-model")
}

func BenchmarkModelKeepAlive64(b *testing.B) { benchClient(b, Config{}) }

func BenchmarkGoNetHTTPKeepAlive64(b *testing.B) {
	benchClient(b, Config{Implementation: ImplGoNetHTTP})
}
