package timeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// digestOf reads reqs as the loader reads a request file too large to hold: a first pass
// that counts, then a second that files each request.
func digestOf(reqs []Request, conns []report.Conn, pl Plan) *Digest {
	d := NewDigest()
	for _, r := range reqs {
		d.Count(r.StartMs, r.LatencyMs, r.Conn)
	}
	d.Lay(conns, pl)
	for i := range reqs {
		r := reqs[i]
		d.Add(&r)
	}
	d.Finish(pl)
	return d
}

// bursts are n bursts of k requests over c connections, 3 s apart, every 997th failed
// after its connection was closed by the server.
func bursts(n, k, c int) ([]Request, []report.Conn) {
	var reqs []Request
	var conns []report.Conn
	for b := range n {
		for j := range k {
			i := len(reqs)
			r := report.Request{Seq: i, StartMs: float64(b*3000) + float64(j)*0.37, LatencyMs: 100 + float64(j%50)*1.01,
				Conn: uint64(j%c + 1), Reused: b > 0 || j >= c, Attempts: 1, Status: 200}
			if i%997 == 0 {
				r.Class, r.Error, r.Status = "reset", "connection reset by peer", 0
				at := r.StartMs + 1
				conns = append(conns, report.Conn{ClientConn: r.Conn, ClosedMs: &at, ClosedBy: report.ClosedByServer, Reason: "idle"})
			}
			reqs = append(reqs, Request{Request: r})
		}
	}
	return reqs, conns
}

// A digest draws a run of more than MaxDrawn requests on fewer than CanvasLanes lanes
// exactly as its requests held one by one: the same buckets, closes, pauses and axis.
func TestDigestLanesDrawAsHeldRequests(t *testing.T) {
	t.Parallel()
	reqs, conns := bursts(41, 400, 300) // 16,400 requests
	pl := Plan{RTTMs: 20, Burst: 400, PauseMinMs: 2000}
	dg := digestOf(reqs, conns, pl)
	held, digest := Build(reqs, conns, nil, pl), Build(nil, conns, dg, pl)
	if dg.N != len(reqs) || dg.Canvas || held.Aggregated == "" || held.Pauses != 40 {
		t.Fatalf("digest of %d requests (canvas %v), held: %d pauses, note %q; want 16400 requests on SVG lanes, aggregated, 40 pauses",
			dg.N, dg.Canvas, held.Pauses, held.Aggregated)
	}
	if digest.SVG != held.SVG || digest.Axis != held.Axis || digest.Aggregated != held.Aggregated || digest.Pauses != held.Pauses || digest.Lanes != held.Lanes {
		t.Errorf("the digest's timeline (%d lanes, %d pauses, %d bytes) differs from the held requests' (%d lanes, %d pauses, %d bytes)",
			digest.Lanes, digest.Pauses, len(digest.SVG), held.Lanes, held.Pauses, len(held.SVG))
	}
	if dg.idx != nil || dg.open != nil || dg.pg != nil || dg.byConn != nil {
		t.Error("the digest keeps what only its passes needed")
	}
}

// On a canvas a digest merges the successful requests of a lane and keeps each failure as
// itself, two in a row too: its entries stand for every request, and every failure has its
// error text.
func TestCanvasDigestKeepsEveryFailure(t *testing.T) {
	t.Parallel()
	// 1,100 lanes of 12 requests each, one a millisecond taking 0.9 ms; two in a row of
	// every 97 fail.
	var reqs []Request
	failures := 0
	for c := range 1100 {
		for k := range 12 {
			r := report.Request{Seq: len(reqs), StartMs: float64(c)*0.1 + float64(k), LatencyMs: 0.9, Conn: uint64(c + 1), Reused: k > 0, Attempts: 1, Status: 200}
			if r.Seq%97 < 2 {
				r.Class, r.Error, r.Status = "eof", "unexpected EOF", 0
				failures++
			}
			reqs = append(reqs, Request{Request: r})
		}
	}
	var conns []report.Conn
	pl := Plan{RTTMs: 20}
	tl := Build(nil, conns, digestOf(reqs, conns, pl), pl)
	_, data, _ := strings.Cut(string(tl.SVG), `class="tldata">`)
	data, _, _ = strings.Cut(data, "</script>")
	var d CanvasData
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatalf("canvas %v: %v", tl.Canvas, err)
	}
	counted, failed := 0, 0
	for i := 0; i < len(d.R); i += 5 {
		if n := d.R[i+4]; n < 0 {
			counted += int(-n)
		} else {
			counted++
		}
		if d.R[i+3] == KindCodes[KindFailed] {
			failed++
		}
	}
	for i, e := range d.Err {
		if e != "eof: unexpected EOF" {
			t.Errorf("entry %s: error text %q; want the request's error", i, e)
		}
	}
	if !tl.Canvas || counted != len(reqs) || failed != failures || len(d.Err) != failures || tl.Failed != failures || len(d.R)/5 > len(reqs)/3 {
		t.Errorf("canvas %v: %d entries stand for %d requests, %d failed (%d error texts, %d counted); want %d requests in under a third as many entries, %d failed",
			tl.Canvas, len(d.R)/5, counted, failed, len(d.Err), tl.Failed, len(reqs), failures)
	}
}
