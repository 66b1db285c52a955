package netsim

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// BenchmarkSmallRTT is the case of services in one region, 1 ms RTT.
//
//   - reused: 64 kept-alive HTTP/1.1 connections, each sending sequential GETs, so 64
//     requests are always in flight through one proxy. The model is 1 RTT. The same with
//     8 in flight shows the link where the endpoints leave the cores some room.
//   - new-tls: sequential GETs each on a new TLS 1.3 connection. The model is 3 RTT.
//
// Every round measures the same load twice, straight to the server and through the
// proxy, back to back, so both see the same machine. It reports, as the median over the
// rounds (min and max beside it):
//
//	x-model    p50 through the proxy / the model
//	x-direct   p50 through the proxy / (the model + p50 straight to the server): what the
//	           link adds beyond its RTT, against what the endpoints alone cost
//	late-p50-us, late-p99-us  how late the link released chunks (its lag record)
//	cpu-us/req, direct-cpu-us/req  the whole process's CPU per request, through the
//	           proxy and straight to the server
//
// Run it with: go test -run '^$' -bench SmallRTT -benchtime 1x ./engine/netsim
func BenchmarkSmallRTT(b *testing.B) {
	const rtt = time.Millisecond
	for _, inFlight := range []int{64, 8} {
		b.Run(fmt.Sprintf("reused/inflight=%d", inFlight), func(b *testing.B) {
			addr, _ := httpServer(b, false)
			benchSmallRTT(b, addr, rtt, 1, func(target string) []time.Duration {
				return rawLoad(b, target, inFlight, 3840/inFlight)
			})
		})
	}
	b.Run("new-tls", func(b *testing.B) {
		addr, pool := httpServer(b, true)
		c := httpClient(b, pool, false)
		get(b, c, "https", addr) // warm up
		benchSmallRTT(b, addr, rtt, 3, func(target string) []time.Duration {
			lat := make([]time.Duration, 0, 40)
			for range 40 {
				lat = append(lat, get(b, c, "https", target))
			}
			return lat
		})
	})
}

// benchSmallRTT runs rounds of load against the server straight and through a fresh
// proxy and reports the ratios described at BenchmarkSmallRTT. The load function is
// given the address to use; the server address is the proxy's upstream.
func benchSmallRTT(b *testing.B, upstream string, rtt time.Duration, trips float64, load func(target string) []time.Duration) {
	b.Helper()
	const rounds = 5
	var xModel, xDirect, lateP50, lateP99, cpuPerReq, cpuDirectPerReq []float64
	model := time.Duration(trips * float64(rtt))
	for range b.N {
		for range rounds {
			before := cpuTime(b)
			direct := load(upstream)
			cpuDirect := cpuTime(b) - before
			rec := &lag.Recorder{}
			p, err := Start(Config{Upstream: upstream, RTT: rtt, Lag: rec})
			if err != nil {
				b.Fatal(err)
			}
			before = cpuTime(b)
			lat := load(p.Addr())
			cpu := cpuTime(b) - before
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			p50, d50 := median(lat), median(direct)
			xModel = append(xModel, float64(p50)/float64(model))
			xDirect = append(xDirect, float64(p50)/float64(model+d50))
			s := rec.Summary()
			lateP50 = append(lateP50, float64(s.P50.Microseconds()))
			lateP99 = append(lateP99, float64(s.P99.Microseconds()))
			cpuPerReq = append(cpuPerReq, float64(cpu.Microseconds())/float64(len(lat)))
			cpuDirectPerReq = append(cpuDirectPerReq, float64(cpuDirect.Microseconds())/float64(len(direct)))
		}
	}
	report := func(v []float64, unit string) {
		slices.Sort(v)
		b.ReportMetric(v[len(v)/2], unit)
		b.ReportMetric(v[0], unit+"-min")
		b.ReportMetric(v[len(v)-1], unit+"-max")
	}
	b.ReportMetric(0, "ns/op")
	report(xModel, "x-model")
	report(xDirect, "x-direct")
	report(lateP50, "late-p50-us")
	report(lateP99, "late-p99-us")
	report(cpuPerReq, "cpu-us/req")
	report(cpuDirectPerReq, "direct-cpu-us/req")
}

func median(l []time.Duration) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[len(s)/2]
}

// rawLoad keeps conns HTTP/1.1 keep-alive connections to target busy with n sequential
// GETs each, all at once, and returns every latency but each connection's first (which
// opens it). The client is a few lines over a raw socket, so what is measured is the
// server and the link rather than a client library.
func rawLoad(tb testing.TB, target string, conns, n int) []time.Duration {
	fail := make(chan error, conns)
	req := []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
	lat := inStep(conns, func(int) func() []time.Duration {
		c, err := net.Dial("tcp", target)
		if err != nil {
			fail <- err
			return nil
		}
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		buf := make([]byte, 4096)
		do := func() error {
			if _, err := c.Write(req); err != nil {
				return err
			}
			have := 0
			for {
				m, err := c.Read(buf[have:])
				if err != nil {
					return err
				}
				have += m
				// The handler answers an 11-byte body with Content-Length.
				if i := bytes.Index(buf[:have], []byte("\r\n\r\n")); i >= 0 && have-i-4 >= 11 {
					return nil
				}
			}
		}
		if err := do(); err != nil {
			c.Close()
			fail <- err
			return nil
		}
		return func() []time.Duration {
			defer c.Close()
			own := make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				if err := do(); err != nil {
					fail <- err
					return nil
				}
				own = append(own, time.Since(t0))
			}
			return own
		}
	})
	select {
	case err := <-fail:
		tb.Fatalf("raw load: %v", err)
	default:
	}
	if len(lat) != conns*n {
		tb.Fatalf("raw load: %d latencies, want %d", len(lat), conns*n)
	}
	return lat
}
