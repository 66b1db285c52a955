package topology

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/inorder"
	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
	"github.com/kalab-dev/kalab/engine/topology/internal/reuse"
)

// recorder takes each request's event as it ends: into the aggregate, the request file,
// the map of client to server connections, and the reuse invariants.
type recorder struct {
	run      *scenario.Run
	observer Observer
	scale    shape.Scale
	tm       *judge.Timers
	start    time.Time
	agg      *metrics.Aggregator
	// reqs is the requests file, nil when requests are not written; on the virtual clock an
	// inorder.Writer in front of it writes the requests that end at one instant in seq order.
	reqs   inorder.Sink
	server serverHop
	// handshake is the link's simulated SYN/SYN-ACK: the client's connect time includes it
	// (one RTT, real time); a dropped SYN shows as a connect of a second or more.
	handshake time.Duration

	answered, retriedConnects atomic.Int64
	sawConn                   atomic.Bool
	requests                  int // set once the load ended

	mu sync.Mutex
	// serverOf is which server connection each client connection is, from the Kalab-Conn
	// header of its responses: a failed request learns from it when the server closed its
	// socket.
	serverOf map[uint64]uint64
	// clientWhy is why the client closed each connection it closed itself, by client
	// connection id, once the client is closed.
	clientWhy map[uint64]string
	reuse     reuse.Book
	failed    map[int]bool // bursts with a failed request
}

func newRecorder(r *scenario.Run, obs Observer, scale shape.Scale, tm *judge.Timers, srv serverHop, handshake time.Duration) *recorder {
	return &recorder{run: r, observer: obs, scale: scale, tm: tm, agg: metrics.New(), server: srv,
		handshake: handshake, serverOf: map[uint64]uint64{}, reuse: reuse.NewBook(), failed: map[int]bool{}}
}

// record takes one request's event; planned is when the schedule meant it to start, zero
// for a real program, which keeps its own schedule.
func (rc *recorder) record(ev client.Event, planned time.Time) { rc.recordFrom(ev, planned, "") }

// recordFrom is record for a request of a replay run, sent by the recorded client from.
func (rc *recorder) recordFrom(ev client.Event, planned time.Time, from string) {
	if synRetried(ev.Connect, rc.handshake) {
		rc.retriedConnects.Add(1)
	}
	if ev.Status > 0 {
		rc.answered.Add(1)
	}
	if ev.ConnID != 0 {
		rc.sawConn.Store(true)
	}
	rc.agg.Add(ev)
	if rc.tm != nil {
		rc.tm.Spans.Add(judge.Span{Start: ev.Start, End: ev.Start.Add(ev.Latency), Conn: ev.ConnID, Reused: ev.Reused, Client: from, Seq: ev.Seq, Failed: !ev.OK()})
	}
	rc.mu.Lock()
	rc.reuse.Add(ev)
	if !ev.OK() {
		rc.failed[burstOf(ev.Seq, rc.run.Settings.Load.Burst)] = true
	}
	if ev.ServerConn != 0 && ev.ConnID != 0 {
		rc.serverOf[ev.ConnID] = ev.ServerConn
	}
	if rc.reqs != nil {
		rq := requestRecord(ev, rc.start, planned, float64(rc.scale))
		rq.Client = from
		rc.serverClose(&rq, ev)
		rc.reqs.Write(&rq)
	}
	rc.mu.Unlock()
	if rc.observer != nil {
		rc.observer.RequestDone(rc.run, ev.OK())
	}
}

// burstOf is the 0-based burst of request seq with bursts of size requests (0: one burst).
func burstOf(seq, size int) int {
	if size <= 0 {
		return 0
	}
	return seq / size
}

// failedBursts returns failed_bursts and failed_bursts_mask. Caller holds rc.mu.
func (rc *recorder) failedBursts() (n, mask float64) {
	for b := range rc.failed {
		if b < 53 {
			mask += math.Ldexp(1, b)
		}
	}
	return float64(len(rc.failed)), mask
}

// serverClose notes, on a failed request, when and why the server closed its connection.
func (rc *recorder) serverClose(rq *report.Request, ev client.Event) {
	if ev.OK() {
		return
	}
	if rq.ServerConn == 0 {
		rq.ServerConn = rc.serverOf[ev.ConnID]
	}
	if rq.ServerConn == 0 {
		return
	}
	if c, ok := rc.server.closedAt(rq.ServerConn); ok {
		at := max(float64(c.Closed.Sub(rc.start))/float64(time.Millisecond)/float64(rc.scale), 0)
		rq.ServerClosedMs, rq.ServerCloseReason = &at, c.Reason
	}
}
