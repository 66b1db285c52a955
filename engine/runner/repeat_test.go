package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// TestVirtualRepeats runs every run of the bundled suite that goes on the virtual clock
// (scenarios/*.yaml and scenarios/truth/*.yaml, the truth files' model variants; under the
// race detector only files 08, 11, 15, 17 and 21) twice, the second time at GOMAXPROCS 1: every
// run's record (but for the machine's fields), requests file and connections file are
// identical byte for byte. Same-instant events (a burst's requests, their SYN-ACKs, their
// delayed responses, a keepalive probe and a middlebox poll) are ordered by the network,
// not by Go's scheduler. What a multiplexing library still leaves to the scheduler the
// record names in a note (configure.Unrepeatable), and only what a note names is
// left out: the byte counts of HTTP/2 and HTTP/3 runs, the close times of HTTP/3 runs'
// connections, and the requests file of an HTTP/2 burst whose requests wait together for a
// new connection. The HTTP/1.1 runs carry no such note.
func TestVirtualRepeats(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled virtual runs twice")
	}
	var p *scenario.Plan
	if testci.Race() {
		p = bundled(t, "08-pool-thrash.yaml", "11-http2-cold-start.yaml", "15-nat-black-hole.yaml",
			"17-h3-negotiated-idle.yaml", "21-h3-vs-h2-burst.yaml")
	} else {
		p = virtualSuite(t)
	}
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var want map[string]string
	for i, procs := range []int{prev, 1} {
		runtime.GOMAXPROCS(procs)
		got := repeatOnce(t, p)
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
	t.Logf("%d runs on the virtual clock, identical at GOMAXPROCS %d and 1", p.Runs(), prev)
}

// repeatOnce runs p on the virtual clock and returns what must repeat of each run: its
// record without the machine's fields, its requests file and its connections file, with
// what the run's notes name left out.
func repeatOnce(t *testing.T, p *scenario.Plan) map[string]string {
	t.Helper()
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range out.Runs {
		k := r.Scenario + "/" + r.Variant
		bytes, requests := noted(r, "bytes_up and bytes_down may differ"), noted(r, "requests file's per-request fields may differ")
		closes := noted(r, "connections file's close times may differ")
		switch {
		case r.Clock != "virtual":
			t.Fatalf("%s ran on the %s clock", k, r.Clock)
		case (r.Scenario == "pool-thrash" || r.Scenario == "nat-black-hole") && (bytes || requests || closes):
			t.Errorf("%s, over HTTP/1.1, has a note that something does not repeat: %q", k, r.Notes)
		}
		got[k+" record"] = repeatable(t, r, bytes)
		if !requests {
			got[k+" requests"] = fileOf(t, out.Dir, r.RequestsFile)
		}
		got[k+" connections"] = fileOf(t, out.Dir, r.ConnectionsFile)
		if closes {
			got[k+" connections"] = withoutCloseTimes(got[k+" connections"])
		}
	}
	return got
}

// virtualSuite is every run of the bundled suite that goes on the virtual clock: the runs
// of scenarios/*.yaml and scenarios/truth/*.yaml that name no real program.
func virtualSuite(t *testing.T) *scenario.Plan {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.yaml", "truth/*.yaml"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "scenarios", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	opt := virtualOpts(t)
	for _, sc := range p.Scenarios {
		sc.Runs = slices.DeleteFunc(sc.Runs, func(r *scenario.Run) bool {
			c := compile.One(sc, r, opt.Compile())
			return !c.Virtual() || c.Refused != ""
		})
	}
	p.Scenarios = slices.DeleteFunc(p.Scenarios, func(sc *scenario.Scenario) bool { return len(sc.Runs) == 0 })
	if n := p.Runs(); n < 100 {
		t.Fatalf("the bundled suite has %d runs on the virtual clock, want the 100 or more it had", n)
	}
	return p
}

// withoutCloseTimes is a connections file with each line's closed_at_ms blanked.
func withoutCloseTimes(file string) string {
	lines := strings.Split(file, "\n")
	for i, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		delete(m, "closed_at_ms")
		b, _ := json.Marshal(m)
		lines[i] = string(b)
	}
	return strings.Join(lines, "\n")
}

// noted reports whether one of r's notes says what.
func noted(r *report.Run, what string) bool {
	for _, n := range r.Notes {
		if strings.Contains(n, what) {
			return true
		}
	}
	return false
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
			if r.Clock == "virtual" && strings.Contains(strings.Join(r.Notes, " "), "middlebox_dropped_datagrams by a datagram or two") {
				delete(ms, "middlebox_dropped_datagrams") // QUIC's packets, as its bytes
			}
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
