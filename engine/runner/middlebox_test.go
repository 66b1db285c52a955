package runner

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/topology"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/report"
)

// forwarder is a trivial middlebox: a TCP pass-through that counts what it forwards. It
// is the proof that a new hop needs no change to the runner's control flow.
type forwarder struct {
	ln    net.Listener
	conns atomic.Int64
	bytes atomic.Int64
	wg    sync.WaitGroup
}

func (f *forwarder) Role() string { return "forwarder" }

func (f *forwarder) Start(_ context.Context, next string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	f.ln = ln
	f.wg.Add(1)
	go f.accept(next)
	return ln.Addr().String(), nil
}

func (f *forwarder) accept(next string) {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.conns.Add(1)
		up, err := net.Dial("tcp", next)
		if err != nil {
			c.Close()
			continue
		}
		f.wg.Add(2)
		go f.pipe(up, c)
		go f.pipe(c, up)
	}
}

func (f *forwarder) pipe(dst, src net.Conn) {
	defer f.wg.Done()
	n, _ := io.Copy(dst, src)
	f.bytes.Add(n)
	dst.Close()
	src.Close()
}

func (f *forwarder) Identity() topology.Identity {
	return topology.Identity{Kind: "test", Name: "forwarder", Verified: true}
}
func (f *forwarder) Timing() map[string]*lag.Recorder { return nil }
func (f *forwarder) Stats() topology.Stats            { return forwardStats{f.conns.Load(), f.bytes.Load()} }

func (f *forwarder) Close() error {
	if f.ln == nil {
		return nil
	}
	err := f.ln.Close()
	f.wg.Wait()
	return err
}

type forwardStats struct{ conns, bytes int64 }

func (s forwardStats) Flatten(into map[string]float64) {
	into["forwarder_connections"] = float64(s.conns)
	into["forwarder_bytes"] = float64(s.bytes)
}

// A hop added between the link and the server carries the run's traffic and its typed
// stats reach the record, with nothing in the runner told about it.
func TestMiddleboxHopNeedsNoRunnerChange(t *testing.T) {
	t.Parallel()
	p := plan(t, `
name: middlebox
network: {rtt: 10ms}
load: {requests: 20, concurrency: 2}
expect: ["errors == 0", "connections == 2"]
`)
	o := opts(t)
	o.middleboxes = []func() topology.Hop{func() topology.Hop { return &forwarder{} }}
	out, err := Execute(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	r := out.Runs[0]
	if r.Status != report.StatusPass {
		t.Fatalf("%s %s %+v", r.Status, r.Error, r.Checks)
	}
	var roles []string
	var fw *report.Hop
	for i, h := range r.Hops {
		roles = append(roles, h.Role)
		if h.Role == "forwarder" {
			fw = &r.Hops[i]
		}
	}
	if want := "client link forwarder server"; joined(roles) != want {
		t.Fatalf("hops %q, want %q", joined(roles), want)
	}
	if fw.Stats["forwarder_connections"] != r.Metrics.ServerConnections || fw.Stats["forwarder_connections"] != 2 {
		t.Errorf("forwarder counted %v connections, server %v", fw.Stats["forwarder_connections"], r.Metrics.ServerConnections)
	}
	if fw.Stats["forwarder_bytes"] != r.Metrics.BytesUp+r.Metrics.BytesDown {
		t.Errorf("forwarder carried %v bytes, the link %v", fw.Stats["forwarder_bytes"], r.Metrics.BytesUp+r.Metrics.BytesDown)
	}
}

func joined(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// A scenario's middlebox is the hop the client dials, in front of the link: a request
// after a pause longer than its idle timeout hangs until the client's timeout, the box's
// typed stats reach the record, and the link behind it still gives the client its
// handshake and counts one connection per flow. On the virtual clock: the counts are the
// model's.
func TestScenarioMiddleboxIsTheFrontHop(t *testing.T) {
	t.Parallel()
	p := plan(t, `
name: nat
network: {rtt: 20ms}
middlebox: {preset: aws-network-firewall}
server: {idle_timeout: none}
client: {timeout: 30s}
load: {requests: 4, burst: 2, pause: 8m}
expect: ["errors_by_class.timeout == 1", "middlebox_expired == 1", "middlebox_flows == 2", "proxy_connections == 2"]
`)
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	if r.Status != report.StatusPass || r.Clock != scenario.ClockVirtual {
		t.Fatalf("%s on the %q clock: %s %+v", r.Status, r.Clock, r.Error, r.Checks)
	}
	var roles []string
	for _, h := range r.Hops {
		roles = append(roles, h.Role)
		if h.Role == topology.RoleMiddlebox && (h.Name != "aws-network-firewall" || h.Stats["middlebox_dropped_bytes"] == 0) {
			t.Errorf("middlebox hop %+v: want its preset's name and the hung request's bytes dropped", h)
		}
	}
	if want := "client middlebox link server"; joined(roles) != want {
		t.Fatalf("hops %q, want %q", joined(roles), want)
	}
}
