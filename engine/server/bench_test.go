package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// benchInFlight and benchBody are the measurement: plain HTTP/1.1 keep-alive,
// 64 requests in flight (one per connection), 200-byte body.
const (
	benchInFlight = 64
	benchBody     = 200
)

// cpuTime is this process's user+system CPU so far.
func cpuTime(testing.TB) time.Duration { return lag.ProcessCPU() }

// BenchmarkHTTP1KeepAlive64 drives the server from an in-process client: 64 keep-alive
// connections, each with one request in flight. cpu-µs/req counts the whole process,
// client included, so it is an upper bound on the server's share.
func BenchmarkHTTP1KeepAlive64(b *testing.B) {
	s := start(b, Config{BodyBytes: benchBody})
	conns := make([]net.Conn, benchInFlight)
	for i := range conns {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	req := []byte("GET / HTTP/1.1\r\nHost: kalab\r\n\r\n")
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	var firstErr atomic.Value
	b.ResetTimer()
	cpu0, t0 := cpuTime(b), time.Now()
	for _, c := range conns {
		wg.Go(func() {
			c.SetDeadline(time.Now().Add(5 * time.Minute)) // bounds the loop in time
			br := bufio.NewReaderSize(c, 4096)
			for left.Add(-1) >= 0 {
				if _, err := c.Write(req); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if err := readResponse(br); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(t0), cpuTime(b)-cpu0
	b.StopTimer()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	if got := s.Stats().Requests; got != int64(b.N) {
		b.Fatalf("server counted %d requests, sent %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
}

// readResponse consumes one HTTP/1.1 response with a Content-Length body; a minimal
// parser keeps the client's CPU small next to the server's.
func readResponse(br *bufio.Reader) error {
	n := -1
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading response header: %w", err)
		}
		if first && !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
			return fmt.Errorf("unexpected status line %q", line)
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, err = strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return fmt.Errorf("bad Content-Length %q", line)
			}
		}
	}
	if n < 0 {
		return errors.New("response without Content-Length")
	}
	_, err := br.Discard(n)
	return err
}

// wrkDuration is how long each wrk run lasts; long enough for a stable rate.
const wrkDuration = 5 * time.Second

// BenchmarkWrk measures the same load with wrk (an external client, so the CPU counted
// is the server's alone) against the embedded server and against Debian's nginx
// serving a 200-byte static file. Each sub-benchmark is one wrk run; it is skipped
// when wrk or nginx is not installed.
func BenchmarkWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk not installed (apt-get install wrk)") // skip: a benchmark: CI runs no benchmark
	}
	b.Run("embedded", func(b *testing.B) {
		s := start(b, Config{BodyBytes: benchBody})
		cpu0 := cpuTime(b)
		reqs, secs := runWrk(b, wrk, "http://"+s.Addr()+"/")
		cpu := cpuTime(b) - cpu0
		if got := s.Stats().Requests; got < reqs {
			b.Fatalf("server counted %d requests, wrk completed %d", got, reqs)
		}
		reportWrk(b, reqs, secs, cpu)
	})
	b.Run("nginx", func(b *testing.B) {
		const nginxBin = "/usr/sbin/nginx"
		if _, err := os.Stat(nginxBin); err != nil {
			b.Skip("nginx not installed (apt-get install nginx)") // skip: a benchmark: CI runs no benchmark
		}
		addr, pid := startNginx(b, nginxBin)
		cpu0 := processTreeCPU(b, pid)
		reqs, secs := runWrk(b, wrk, "http://"+addr+"/body")
		cpu := processTreeCPU(b, pid) - cpu0
		reportWrk(b, reqs, secs, cpu)
	})
}

func reportWrk(b *testing.B, reqs int64, secs float64, cpu time.Duration) {
	if reqs == 0 {
		b.Fatal("wrk completed no requests")
	}
	b.ReportMetric(float64(reqs)/secs, "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(reqs), "cpu-µs/req")
	b.ReportMetric(secs*1e9/float64(reqs), "ns/op")
}

var (
	wrkTotal = regexp.MustCompile(`(\d+) requests in ([0-9.]+)(ms|s|m)`)
	wrkNon2x = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkErrs  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// runWrk runs wrk with 64 connections for wrkDuration and returns the completed
// requests and the seconds wrk reports; errors or non-2xx answers fail the benchmark.
func runWrk(b *testing.B, wrk, url string) (int64, float64) {
	ctx, cancel := context.WithTimeout(context.Background(), wrkDuration+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, wrk, "-t2", "-c"+strconv.Itoa(benchInFlight),
		"-d"+strconv.Itoa(int(wrkDuration/time.Second))+"s", url).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	if m := wrkNon2x.FindSubmatch(out); m != nil {
		b.Fatalf("wrk saw %s non-2xx responses:\n%s", m[1], out)
	}
	if m := wrkErrs.FindSubmatch(out); m != nil {
		b.Fatalf("wrk saw socket errors:\n%s", out)
	}
	m := wrkTotal.FindSubmatch(out)
	if m == nil {
		b.Fatalf("cannot parse wrk output:\n%s", out)
	}
	reqs, _ := strconv.ParseInt(string(m[1]), 10, 64)
	secs, _ := strconv.ParseFloat(string(m[2]), 64)
	switch string(m[3]) {
	case "ms":
		secs /= 1000
	case "m":
		secs *= 60
	}
	return reqs, secs
}

// startNginx runs nginx in the foreground on a free loopback port with a temporary
// prefix, serving a benchBody-byte file, keep-alive unlimited like the embedded server.
func startNginx(b *testing.B, bin string) (string, int) {
	dir := b.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nginx binds it next; the tiny window is acceptable for a benchmark
	if err := os.WriteFile(filepath.Join(dir, "body"), makeBody(benchBody), 0o644); err != nil {
		b.Fatal(err)
	}
	conf := fmt.Sprintf(`daemon off;
master_process on;
user root;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 75s;
    keepalive_requests 100000000;
    client_body_temp_path %[1]s/body_temp;
    proxy_temp_path %[1]s/proxy_temp;
    fastcgi_temp_path %[1]s/fastcgi_temp;
    uwsgi_temp_path %[1]s/uwsgi_temp;
    scgi_temp_path %[1]s/scgi_temp;
    server {
        listen %[2]s;
        root %[1]s;
        default_type text/plain;
    }
}
`, dir, addr)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting nginx: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT) // graceful: workers exit, then the master
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("nginx did not listen on %s: %s", addr, stderr.String())
		}
	}
	return addr, cmd.Process.Pid
}

// processTreeCPU sums user+system CPU of pid and its direct children (nginx's master
// and workers) from /proc.
func processTreeCPU(b *testing.B, pid int) time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatalf("reading /proc: %v", err)
	}
	var ticks int64
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // the process ended between ReadDir and ReadFile
		}
		// Fields after the parenthesised command: state ppid ... utime(14) stime(15).
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if p != pid && ppid != pid {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += ut + st
	}
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ticks) * time.Second / clkTck
}
