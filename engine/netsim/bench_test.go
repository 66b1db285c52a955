package netsim

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/kernel"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// The fidelity benchmarks each run a fixed sample per iteration (they take
// seconds, so the framework runs one) and report the latency distribution
// against the modeled cost. overhead-% is (median - modeled) / modeled.

func BenchmarkReusedRequest(b *testing.B) {
	for _, rtt := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond} {
		b.Run("rtt="+rtt.String(), func(b *testing.B) {
			benchRequests(b, rtt, 0, false, true, 200, 1)
		})
	}
	// The same at 50 ms with timers only: what spinning buys, and costs.
	b.Run("rtt=50ms/spin=off", func(b *testing.B) {
		benchRequests(b, 50*time.Millisecond, -1, false, true, 200, 1)
	})
}

func BenchmarkNewTCPRequest(b *testing.B) {
	benchRequests(b, 150*time.Millisecond, 0, false, false, 40, 2)
}

func BenchmarkNewTLS13Request(b *testing.B) {
	benchRequests(b, 150*time.Millisecond, 0, true, false, 40, 3)
}

// benchRequests sends n sequential GETs through a proxy and reports the
// median, p99-p50 and overhead against rtts round trips.
func benchRequests(b *testing.B, rtt, spin time.Duration, tlsOn, keepAlive bool, n int, rtts float64) {
	addr, pool := httpServer(b, tlsOn)
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	get(b, httpClient(b, pool, false), scheme, addr) // warm up without the proxy
	var lat []time.Duration
	var cpu time.Duration
	for range b.N {
		p, err := Start(Config{Upstream: addr, RTT: rtt, SpinWindow: spin})
		if err != nil {
			b.Fatal(err)
		}
		c := httpClient(b, pool, keepAlive)
		if keepAlive {
			get(b, c, scheme, p.Addr()) // opens the connection the sample reuses
		}
		before := cpuTime(b)
		for range n {
			lat = append(lat, get(b, c, scheme, p.Addr()))
		}
		cpu += cpuTime(b) - before
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
	}
	// The same requests straight to the server, each after an idle pause
	// like the one the proxy's delay imposes, give the endpoints' own cost
	// (HTTP, TLS CPU, waking idle threads) so the proxy's share can be told
	// apart from it.
	direct := httpClient(b, pool, keepAlive)
	get(b, direct, scheme, addr)
	var base []time.Duration
	for range max(n/4, 10) {
		time.Sleep(rtt / 2)
		base = append(base, get(b, direct, scheme, addr))
	}
	slices.Sort(lat)
	slices.Sort(base)
	q := func(l []time.Duration, f float64) time.Duration { return l[int(f*float64(len(l)-1))] }
	want := time.Duration(rtts * float64(rtt))
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p50 := q(lat, 0.5)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(q(lat, 0.99)-p50), "p99-p50-ms")
	b.ReportMetric(100*float64(p50-want)/float64(want), "overhead-%")
	b.ReportMetric(ms(q(base, 0.5)), "direct-p50-ms")
	b.ReportMetric(ms(q(base, 0.99)-q(base, 0.5)), "direct-p99-p50-ms")
	b.ReportMetric(100*float64(p50-want-q(base, 0.5))/float64(want), "proxy-overhead-%")
	b.ReportMetric(float64(p50)/float64(rtt), "RTTs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-us/req")
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(testing.TB) time.Duration { return lag.ProcessCPU() }

// BenchmarkIdleConns holds 5,000 idle connections through one proxy and
// reports the proxy process's peak RSS growth per connection. The client
// and server ends live in a child process (this test binary re-run as
// TestIdleHelper) so that only the proxy's memory and descriptors are
// counted here, and so each process needs about two descriptors per
// connection instead of four.
func BenchmarkIdleConns(b *testing.B) {
	const n = 5000
	if err := kernel.RaiseFileLimit(2*n + 256); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		benchIdle(b, n)
	}
}

func benchIdle(b *testing.B, n int) {
	f := measureIdle(b, n)
	b.ReportMetric(f.rssPerConn, "idle-B/conn")
	b.ReportMetric(f.restPerConn, "rest-B/conn")
	b.ReportMetric(f.stackPerConn, "stack-B/conn")
	b.ReportMetric(f.heapPerConn, "heap-B/conn")
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(f.peakPerConn, "peak-B/conn")
	b.ReportMetric(float64(n), "open")
	b.ReportMetric(f.goroutinesPerConn, "goroutines/conn")
}

// idleFigures is what holding n idle connections through one proxy cost this
// process, per connection.
type idleFigures struct {
	rssPerConn, restPerConn, peakPerConn, stackPerConn, heapPerConn, goroutinesPerConn float64
	// rssPerGoroutine is what one parked goroutine adds to this process's resident memory,
	// measured right after the links (goroutineRSS): the runtime's own unit of memory on
	// this machine, which the links' figures are judged against.
	rssPerGoroutine float64
}

// goroutineRSS is the resident memory one parked goroutine adds to this process: n
// goroutines blocked on a channel, after a GC and with freed memory returned, so the
// same kernel, page size and runtime that hold the links hold them too.
func goroutineRSS(tb testing.TB, n int) float64 {
	runtime.GC()
	debug.FreeOSMemory()
	base := procStatusKiB(tb, "VmRSS")
	stop := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		go func() { started.Done(); <-stop }()
	}
	started.Wait()
	grown := procStatusKiB(tb, "VmRSS")
	close(stop)
	return float64(grown-base) * 1024 / float64(n)
}

// measureIdle opens n connections through a fresh proxy, with both ends in a
// child process (TestIdleHelper), and measures this process once they are idle.
func measureIdle(tb testing.TB, n int) idleFigures {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NETSIM_IDLE_HELPER="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting helper: %v", err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	expect := func(prefix string) string {
		if !lines.Scan() {
			tb.Fatalf("helper ended before %q: %v", prefix, lines.Err())
		}
		v, ok := strings.CutPrefix(lines.Text(), prefix+" ")
		if !ok {
			tb.Fatalf("helper said %q, want %q", lines.Text(), prefix)
		}
		return v
	}
	upstream := expect("server")

	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Fatalf("resetting peak RSS: %v", err)
	}
	base := procStatusKiB(tb, "VmRSS")
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	g0 := runtime.NumGoroutine()
	p, err := Start(Config{Upstream: upstream, RTT: 10 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	fmt.Fprintf(stdin, "proxy %s\n", p.Addr())
	if got := expect("ready"); got != strconv.Itoa(n) {
		tb.Fatalf("helper verified %s connections, want %d", got, n)
	}
	// Queues drain, links are idle, and their readers have handed their
	// waits to fresh goroutines (readLoop).
	time.Sleep(idleHandoff + 300*time.Millisecond)
	st := p.Stats()
	if st.Open != int64(n) || st.Accepted != int64(n) {
		tb.Fatalf("stats %+v, want %d accepted and open", st, n)
	}
	peak := procStatusKiB(tb, "VmHWM")
	rss := procStatusKiB(tb, "VmRSS")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// At rest: what the setup freed (the dials' stacks, the readers' first
	// stacks, garbage) given back, as the runtime's scavenger does over time.
	runtime.GC()
	debug.FreeOSMemory()
	rest := procStatusKiB(tb, "VmRSS")
	var msRest runtime.MemStats
	runtime.ReadMemStats(&msRest)
	per := func(v float64) float64 { return v / float64(n) }
	goroutines := runtime.NumGoroutine() - g0
	perG := goroutineRSS(tb, n) // after every count above: its goroutines are not the links'
	return idleFigures{
		rssPerGoroutine:   perG,
		rssPerConn:        per(float64(rss-base) * 1024),
		restPerConn:       per(float64(rest-base) * 1024),
		peakPerConn:       per(float64(peak-base) * 1024),
		stackPerConn:      per(float64(int64(msRest.StackInuse) - int64(ms0.StackInuse))),
		heapPerConn:       per(float64(ms.HeapInuse)),
		goroutinesPerConn: per(float64(goroutines)),
	}
}

// TestIdleHelper is the child half of BenchmarkIdleConns; it does nothing
// in a normal test run. It opens the connections through the proxy, checks
// one byte each way on every one, reports "ready N" and holds them until
// its stdin closes.
func TestIdleHelper(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("NETSIM_IDLE_HELPER"))
	if err != nil {
		return // not the helper process: nothing to do (a skip would be one CI has to allow)
	}
	if err := kernel.RaiseFileLimit(uint64(2*n + 256)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.TCPConn, n)
	go func() {
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	fmt.Printf("server %s\n", ln.Addr())
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		t.Fatalf("reading proxy address: %v", err)
	}
	proxy := strings.TrimSpace(strings.TrimPrefix(line, "proxy "))
	deadline := time.Now().Add(2 * time.Minute)
	clients := make([]net.Conn, 0, n)
	for range n {
		c, err := net.DialTimeout("tcp", proxy, 10*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(clients), err)
		}
		defer c.Close()
		clients = append(clients, c)
		if _, err := c.Write([]byte{'u'}); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 1)
	for i := range n {
		var s *net.TCPConn
		select {
		case s = <-accepted:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("only %d of %d connections reached the server", i, n)
		}
		defer s.Close()
		_ = s.SetDeadline(deadline)
		if _, err := io.ReadFull(s, b); err != nil || b[0] != 'u' {
			t.Fatalf("server conn %d: %v", i, err)
		}
		if _, err := s.Write([]byte{'d'}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range clients {
		_ = c.SetDeadline(deadline)
		if _, err := io.ReadFull(c, b); err != nil || b[0] != 'd' {
			t.Fatalf("client conn %d: %v", i, err)
		}
	}
	fmt.Printf("ready %d\n", n)
	_, _ = io.Copy(io.Discard, in) // hold everything until the parent is done
}

// procStatusKiB reads one "kB" field of /proc/self/status.
func procStatusKiB(b testing.TB, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatalf("reading /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("parsing %s: %v", field, err)
			}
			return kb
		}
	}
	b.Fatalf("%s not in /proc/self/status", field)
	return 0
}
