package sweep

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

// narrowALB is file 12's Node behind an ALB with a band narrower than the sweep's grid: the
// pauses 5.9..5.92 s plus the client link's 20 ms make idle gaps of 5.92..5.94 s, and a
// backend idle timeout S races one when S − 200 ms < gap < S: S in (5.92 s, 6.14 s), which
// holds the backend's deployed 6 s. A 5-point grid over 5..8 s is 750 ms apart.
const narrowALB = `
name: alb-narrow
network: {rtt: 20ms}
server: {preset: node}
balancer:
  preset: aws-alb
  backend_network: {rtt: 200ms}
client: {preset: node-agent}
load: {requests: 60, burst: 4, pause: 5.9s..5.92s, seed: 995}
expect: ["status_5xx == 0"]
`

// The band's edges by hand from the plan: the shortest gap of the four seeds' pauses (plus
// the client's RTT) and the longest plus the backend's RTT.
func narrowEdges(t *testing.T) (lo, hi float64) {
	st := plantest.OnlyRun(t, plantest.Load(t, narrowALB)).Settings
	lo, hi = math.Inf(1), math.Inf(-1)
	for seed := int64(995); seed < 999; seed++ {
		spec := configure.Load(st, 1)
		spec.Seed = seed
		for _, p := range load.Pauses(spec) {
			lo, hi = math.Min(lo, p.Seconds()+0.02), math.Max(hi, p.Seconds()+0.02+0.2)
		}
	}
	return lo, hi
}

// On the virtual clock the sweep of server.idle_timeout over 5..8 s runs inside the band
// the grid steps over and brackets both its edges exactly (each edge lies between the
// bracket's safe and unsafe values: the runs and the geometry are the same rule); it names
// the band and never calls the range safe.
func TestSweepFindsTheBandItsGeometryNames(t *testing.T) {
	lo, hi := narrowEdges(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "alb.yaml")
	if err := os.WriteFile(file, []byte(narrowALB), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Options{File: file, Param: "server.idle_timeout", Range: "5s..8s", Until: "status_5xx == 0", Seeds: 4, Grid: 5, Tries: 2,
		Out: filepath.Join(dir, "out"), Host: runner.TestHost(t), Log: zerolog.Nop()}
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	tg, err := o.Open()
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	out, err := Invoke(context.Background(), o, tg, &w)
	if err != nil || out.Unsettled != "" {
		t.Fatalf("sweep: %v, unsettled %q\n%s", err, out.Unsettled, w.String())
	}
	rec, err := LoadRecord(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := rec.Prediction; p == nil || len(p.Edges) != 2 || p.Edges[0] != lo || p.Edges[1] != hi {
		t.Fatalf("geometry %+v; the plan's pauses give the band %v..%v", p, lo, hi)
	}
	if len(rec.Brackets) != 2 {
		t.Fatalf("brackets %+v; want one at each edge of %v..%v\n%s", rec.Brackets, lo, hi, w.String())
	}
	up, down := rec.Brackets[0], rec.Brackets[1]
	if !(up.Safe <= lo && lo < up.Unsafe) || !(down.Unsafe < hi && hi <= down.Safe) {
		t.Errorf("brackets %+v and %+v do not hold the edges %v and %v", up, down, lo, hi)
	}
	text := w.String()
	if strings.Contains(text, "safe over the whole range") || !strings.Contains(text, "an unsafe band inside the range") || !strings.Contains(text, "the geometry agrees") {
		t.Errorf("the sentences do not name the band, or contradict it:\n%s", text)
	}
}
