package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// unrepeatable names what a bundled virtual run may still give differently from run to
// run, and why; everything else of its record, and its requests and connections files
// line for line, must repeat.
var unrepeatable = map[string]struct {
	requests bool // the requests file
	bytes    bool // bytes_up, bytes_down and the hops' byte counts
	why      string
}{
	// Go's HTTP/2 Transport hands a new connection to every request waiting for one at
	// once: their goroutines then race for its first stream and their stream order, inside
	// net/http, where no network event orders them. How many connections are dialled is
	// fixed; which request rides which stream, its latency and the order the lines are
	// written in are not (the response stamps the connection id, hence the byte counts).
	"http2-cold-start": {requests: true, bytes: true, why: "Go's HTTP/2 Transport: the requests woken by a new connection race for its streams"},
	// quic-go packs frames into packets as its connection goroutine finds them queued, and
	// skips packet numbers at random (internal/ackhandler/packet_number_generator.go): the
	// packets' count and sizes vary by a few tens of bytes, the requests do not.
	"h3-negotiated-idle": {bytes: true, why: "quic-go's packetisation and random packet-number skips"},
}

// TestVirtualRepeats runs bundled virtual files twice and once more at GOMAXPROCS 1: every
// run's record (but for the machine's fields), requests file and connections file are
// identical byte for byte, except what unrepeatable names. Same-instant events (a burst's
// requests, their SYN-ACKs, their delayed responses, a keepalive probe and a middlebox
// poll) are ordered by the network, not by Go's scheduler.
func TestVirtualRepeats(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three files three times")
	}
	p := bundled(t, "08-pool-thrash.yaml", "11-http2-cold-start.yaml", "15-nat-black-hole.yaml", "17-h3-negotiated-idle.yaml")
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var want map[string]string
	for i, procs := range []int{prev, prev, 1} {
		runtime.GOMAXPROCS(procs)
		out, err := Execute(context.Background(), p, virtualOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range out.Runs {
			if r.Clock != "virtual" {
				t.Fatalf("%s/%s ran on the %s clock", r.Scenario, r.Variant, r.Clock)
			}
			k := r.Scenario + "/" + r.Variant
			u := unrepeatable[r.Scenario]
			got[k+" record"] = repeatable(t, r, u.bytes)
			if !u.requests {
				got[k+" requests"] = fileOf(t, out.Dir, r.RequestsFile)
			}
			got[k+" connections"] = fileOf(t, out.Dir, r.ConnectionsFile)
		}
		if want == nil {
			want = got
			continue
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("run %d (GOMAXPROCS %d): %s differs from the first run's:\n%s", i+1, procs, k, firstDiff(w, got[k]))
			}
		}
	}
}

// repeatable is r's record without the machine's fields (the run's id and start, wall
// time, CPU and memory, the timing section) and, when bytes is set, without its byte counts.
func repeatable(t *testing.T, r *report.Run, bytes bool) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		if k == "run_id" || k == "started_at" || k == "timing" || strings.Contains(k, "wall") {
			delete(m, k)
		}
	}
	if ms, ok := m["metrics"].(map[string]any); ok {
		delete(ms, "cpu_us_per_request")
		delete(ms, "peak_rss_mb")
		if bytes {
			delete(ms, "bytes_up")
			delete(ms, "bytes_down")
		}
	}
	if bytes {
		delete(m, "hops") // their stats carry the same byte counts
	}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fileOf is a file of the run directory, "" when the run wrote none.
func fileOf(t *testing.T, dir, name string) string {
	t.Helper()
	if name == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			if len(x) > 600 {
				x = x[:600] + "..."
			}
			if len(y) > 600 {
				y = y[:600] + "..."
			}
			return "line " + itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return "(same lines)"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
