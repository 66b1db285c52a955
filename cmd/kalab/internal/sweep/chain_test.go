package sweep

import (
	"bytes"
	"context"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/target"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/geometry"
	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// chainSweep is a path of three boxes with three idle timeouts, in front of a server that
// never closes an idle connection: an AWS NLB (350 s, a reset to the next segment),
// kube-proxy's IPVS table (900 s, drop) and a firewall (200 s, drop), the tightest, last on
// the path. The pauses of 1-5 min outlast none but the firewall. In nlb-tight the NLB
// forgets at 100 s and the firewall at 600 s: the tightest box is the first on the path.
// Each box polls its flows every 100 ms.
const chainSweep = `
name: chain-sweep
server: {idle_timeout: none}
client: {preset: python-requests, timeout: 30s}
middlebox:
  - {preset: aws-nlb}
  - {preset: kube-ipvs}
  - {idle_timeout: 200s, on_expiry: drop}
load: {requests: 12, burst: 2, pause: 1m..5m, seed: 3}
variants:
  - name: fw-tight
  - name: nlb-tight
    middlebox:
      - {preset: aws-nlb, idle_timeout: 100s}
      - {preset: kube-ipvs}
      - {idle_timeout: 600s, on_expiry: drop}
`

// loneBox has one box, given as a mapping.
const loneBox = `
name: lone
server: {idle_timeout: none}
client: {preset: python-requests, timeout: 30s}
middlebox: {preset: aws-nlb}
load: {requests: 12, burst: 2, pause: 1m..5m, seed: 3}
`

const chainSeeds = 4

// chainPauses are the pauses the sweep's seeds draw, in order; a pause within one poll
// (100 ms) after a box's timeout, where which poll notices is not fixed, fails the test.
func chainPauses(t *testing.T, variant string, timeouts ...time.Duration) []time.Duration {
	t.Helper()
	for _, r := range plantest.Load(t, chainSweep).Scenarios[0].Runs {
		if r.Variant != variant {
			continue
		}
		var out []time.Duration
		for seed := r.Settings.Load.Seed; seed < r.Settings.Load.Seed+chainSeeds; seed++ {
			spec := configure.Load(r.Settings, 1)
			spec.Seed = seed
			for _, g := range load.Pauses(spec) {
				for _, e := range timeouts {
					if g >= e && g < e+100*time.Millisecond {
						t.Fatalf("%s: a pause of %v ends within one poll of a box's %v: choose another seed", variant, g, e)
					}
				}
				out = append(out, g)
			}
		}
		slices.Sort(out)
		return out
	}
	t.Fatalf("no variant %s", variant)
	return nil
}

// sweepChain runs one sweep of the file on the virtual clock and returns its record and
// its printed text.
func sweepChain(t *testing.T, variant, param string) (*Record, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "chain.yaml")
	if err := os.WriteFile(file, []byte(chainSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Options{File: file, Run: variant, Param: param, Range: "1m..6m", Until: "errors == 0", Seeds: chainSeeds, Grid: 5, Tries: 2,
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
		t.Fatalf("%s %s: %v, unsettled %q\n%s", variant, param, err, out.Unsettled, w.String())
	}
	rec, err := LoadRecord(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s:\n%s", variant, param, w.String())
	return rec, w.String()
}

// The sweep of the tightest box's idle timeout over a chain of three finds the boundary the
// geometry predicts: the longest of the seeds' pauses (a box that forgets sooner, by more
// than one poll, drops the request after it; one that forgets later forgets none), and the
// rule names the box. With the NLB the tightest box instead, the firewall's idle timeout
// no longer decides: every value fails, at the NLB, which the geometry names; the NLB's
// own idle timeout now has the boundary, and its rule names the NLB.
func TestSweepOfTheTightestBoxOfAChain(t *testing.T) {
	sweepsOutsideRace(t)
	t.Parallel()
	ps := chainPauses(t, "fw-tight", 200*time.Second, 350*time.Second)
	longest := ps[len(ps)-1].Seconds()
	for _, c := range []struct{ variant, param, box string }{
		{"fw-tight", "middlebox.2.idle_timeout", "box 3 of 3 (drop, its idle timeout swept) forgets first"},
		{"nlb-tight", "middlebox.0.idle_timeout", "box 1 of 3 (aws-nlb, reset, its idle timeout swept) forgets first"},
	} {
		rec, text := sweepChain(t, c.variant, c.param)
		if p := rec.Prediction; p == nil || !slices.Equal(p.Edges, []float64{0, longest}) || !strings.HasPrefix(p.Rule, c.box) {
			t.Fatalf("%s: geometry %+v; want edges [0 %v], a rule that starts %q", c.variant, p, longest, c.box)
		}
		if len(rec.Brackets) != 1 {
			t.Fatalf("%s: brackets %+v; want one at %v\n%s", c.variant, rec.Brackets, longest, text)
		}
		// Below the longest pause by more than a poll the box forgets it; at or above it,
		// never: the bracket holds the pause, up to the one poll the geometry leaves open.
		if b := rec.Brackets[0]; !(b.Unsafe < longest && longest-0.1 <= b.Safe && b.Safe-b.Unsafe <= rec.Resolution) {
			t.Errorf("%s: bracket %+v does not hold the longest pause %v (resolution %v)\n%s", c.variant, b, longest, rec.Resolution, text)
		}
		if !strings.Contains(text, "the geometry agrees") || !strings.Contains(text, "geometry: "+c.box) {
			t.Errorf("%s: the sentences do not agree with the geometry or name the box:\n%s", c.variant, text)
		}
	}

	rec, text := sweepChain(t, "nlb-tight", "middlebox.2.idle_timeout")
	const nlb = "box 1 of 3 (aws-nlb, 1m40s, reset) decides whatever the idle timeout of box 3 of 3 (drop, its idle timeout swept)"
	if p := rec.Prediction; p == nil || !slices.Equal(p.Edges, []float64{0}) || !strings.HasPrefix(p.Rule, nlb) {
		t.Fatalf("nlb-tight, the firewall swept: geometry %+v; want edges [0], a rule that starts %q", p, nlb)
	}
	if len(rec.Brackets) != 0 || len(rec.Steps) == 0 {
		t.Errorf("nlb-tight, the firewall swept: brackets %+v; every value fails at the NLB\n%s", rec.Brackets, text)
	}
	for _, pt := range rec.Steps {
		if pt.Verdict != Unsafe {
			t.Errorf("nlb-tight, the firewall swept: %v is %s; the NLB fails every value\n%s", pt.Value, pt.Verdict, text)
		}
	}
}

// The client's idle timeout behind the chain is safe up to the first pause the tightest box
// forgets: flipping the tightest box from the firewall (200 s, third) to the NLB (100 s,
// first) moves the boundary to the first pause past 100 s, and the box named with it.
func TestSweepClientIdleBehindAChainMovesWithTheTightestBox(t *testing.T) {
	sweepsOutsideRace(t)
	t.Parallel()
	ps := chainPauses(t, "fw-tight", 100*time.Second, 200*time.Second, 350*time.Second)
	firstPast := func(e time.Duration) float64 {
		for _, g := range ps {
			if g >= e+100*time.Millisecond {
				return g.Seconds()
			}
		}
		t.Fatalf("no pause outlasts %v", e)
		return 0
	}
	fw, nlb := firstPast(200*time.Second), firstPast(100*time.Second)
	if fw == nlb {
		t.Fatalf("the seeds draw no pause between 100 s and 200 s: the flip cannot move the boundary")
	}
	for _, c := range []struct {
		variant string
		edge    float64
		box     string
	}{
		{"fw-tight", fw, "geometry: box 3 of 3 (idle timeout 3m20s, drop) forgets first"},
		{"nlb-tight", nlb, "geometry: box 1 of 3 (aws-nlb, 1m40s, reset) forgets first"},
	} {
		rec, text := sweepChain(t, c.variant, "client.idle_timeout")
		if p := rec.Prediction; p == nil || !slices.Equal(p.Edges, []float64{c.edge}) {
			t.Fatalf("%s: geometry %+v; want the edge %v", c.variant, p, c.edge)
		}
		if len(rec.Brackets) != 1 {
			t.Fatalf("%s: brackets %+v; want one at %v\n%s", c.variant, rec.Brackets, c.edge, text)
		}
		// A client idle timeout at or below the pause gives the connection up; above it the
		// request goes into the forgotten flow.
		if b := rec.Brackets[0]; !(b.Safe <= c.edge && c.edge < b.Unsafe) {
			t.Errorf("%s: bracket %+v does not hold the first forgotten pause %v\n%s", c.variant, b, c.edge, text)
		}
		if !strings.Contains(text, "the geometry agrees") || !strings.Contains(text, c.box) {
			t.Errorf("%s: the sentences do not agree with the geometry or name the box (%q):\n%s", c.variant, c.box, text)
		}
	}
}

// middlebox.N.FIELD sets box N of the run's own list: the file's when the variant gives
// none, the variant's when it gives one (it replaces the file's whole); the other boxes
// keep their presets and fields.
func TestTargetSetsOneBoxOfTheChain(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "chain.yaml")
	if err := os.WriteFile(file, []byte(chainSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		variant string
		want    []time.Duration
	}{
		{"fw-tight", []time.Duration{350 * time.Second, 900 * time.Second, 150 * time.Second}},
		{"nlb-tight", []time.Duration{100 * time.Second, 900 * time.Second, 150 * time.Second}},
	} {
		tg, err := target.Open(file, "middlebox.2.idle_timeout", c.variant, "", true)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tg.Plan(150)
		if err != nil {
			t.Fatal(err)
		}
		boxes := plantest.OnlyRun(t, p).Settings.Middleboxes()
		var got []time.Duration
		for _, b := range boxes {
			got = append(got, time.Duration(b.IdleTimeout))
		}
		if !slices.Equal(got, c.want) || boxes[0].Preset != "aws-nlb" || boxes[1].Preset != "kube-ipvs" || boxes[2].OnExpiry != "drop" {
			t.Errorf("%s: idle timeouts %v, want %v; boxes %+v %+v %+v", c.variant, got, c.want, *boxes[0], *boxes[1], *boxes[2])
		}
	}
	// The lone box's field keeps its one form.
	lone := filepath.Join(t.TempDir(), "lone.yaml")
	if err := os.WriteFile(lone, []byte(loneBox), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := target.Open(lone, "middlebox.idle_timeout", "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tg.Plan(42)
	if err != nil {
		t.Fatal(err)
	}
	if b := plantest.OnlyRun(t, p).Settings.Middleboxes(); len(b) != 1 || time.Duration(b[0].IdleTimeout) != 42*time.Second || b[0].Preset != "aws-nlb" {
		t.Errorf("lone box: %+v", b)
	}
}

// A parameter that names no box of the run is refused before anything runs, naming the form
// that does.
func TestTargetBoxErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file, lone := filepath.Join(dir, "chain.yaml"), filepath.Join(dir, "lone.yaml")
	for f, src := range map[string]string{file: chainSweep, lone: loneBox} {
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ file, run, param, want string }{
		{file, "fw-tight", "middlebox.idle_timeout", "--param middlebox.idle_timeout: the run's middlebox is a list of 3 boxes (a chain); name one by its place from the client, from 0: --param middlebox.0.idle_timeout to middlebox.2.idle_timeout"},
		{file, "nlb-tight", "middlebox.3.idle_timeout", "--param middlebox.3.idle_timeout: the run's middlebox is a list of 3 boxes; N counts from 0 (the box nearest the client) to 2"},
		{file, "fw-tight", "middlebox.-1.idle_timeout", "--param middlebox.-1.idle_timeout: a box's place N counts from 0, the box nearest the client"},
		{lone, "", "middlebox.0.idle_timeout", "--param middlebox.0.idle_timeout: the run's middlebox is one box, not a list: --param middlebox.idle_timeout"},
	} {
		if _, err := target.Open(c.file, c.param, c.run, "", true); err == nil || err.Error() != c.want {
			t.Errorf("%s %s: %v\nwant %s", c.run, c.param, err, c.want)
		}
	}
}

// chainServer puts a server that closes idle connections behind the chain; every pause
// (130 s to 5 min) outlasts the firewall's 120 s and no other box's timeout.
const chainServer = `
name: chain-server
network: {rtt: 100ms}
server: {idle_timeout: 30s}
client: {preset: python-requests, timeout: 30s}
middlebox:
  - {preset: aws-nlb}
  - {preset: kube-ipvs}
  - {idle_timeout: 120s, on_expiry: drop}
load: {requests: 12, burst: 2, pause: 130s..5m, seed: 3}
`

// The server's idle timeout behind the chain: below the firewall's 120 s the server's FIN
// passes the boxes first and the client never sends on the closed connection; from
// 120 s + one poll the firewall forgets the flow before the FIN passes it, the FIN is lost,
// and every request after a pause meets the forgotten flow. The sweep finds that edge
// where the geometry puts it (up to the poll it leaves open), and the rule names the box.
func TestSweepServerIdleBehindAChainMeetsTheTightestBox(t *testing.T) {
	sweepsOutsideRace(t)
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(file, []byte(chainServer), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Options{File: file, Param: "server.idle_timeout", Range: "1m..3m", Until: "errors == 0", Seeds: chainSeeds, Grid: 5, Tries: 2,
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
	const box = "box 3 of 3 (idle timeout 2m0s, drop) forgets first from S = 2m0.1s"
	if p := rec.Prediction; p == nil || !slices.Equal(p.Edges, []float64{120.1}) || !strings.Contains(p.Rule, box) {
		t.Fatalf("geometry %+v; want the edge 120.1 s and %q", p, box)
	}
	if len(rec.Brackets) != 1 {
		t.Fatalf("brackets %+v; want one at 120 s\n%s", rec.Brackets, w.String())
	}
	if b := rec.Brackets[0]; !(b.Safe < 120.1 && b.Unsafe >= 120 && b.Safe < b.Unsafe) {
		t.Errorf("bracket %+v: want safe below 120.1 s and unsafe from 120 s\n%s", b, w.String())
	}
	if !strings.Contains(w.String(), "the geometry agrees") {
		t.Errorf("the geometry does not agree:\n%s", w.String())
	}
}

// sweepsOutsideRace skips a whole chain sweep under the race detector: its hundreds of
// virtual runs took a minute there, through the search, target and geometry code the other
// sweep tests run under the detector too. The plain pass runs it.
func sweepsOutsideRace(t *testing.T) {
	t.Helper()
	if testci.Race() {
		t.Skip("a whole chain sweep under the race detector: the plain pass runs it") // skip: -race only: CI's plain pass runs it
	}
}

// A balancer of a chain is named by its place, as a box is: the value goes to that
// balancer only, and a name that fits no balancer of the run is refused before anything
// runs. A sweep of the server's idle timeout behind the chain draws its geometry at the last
// balancer, the pause lengthened by every round trip in front of it.
func TestTargetBalancerChain(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "..", "..", "scenarios", "24-alb-envoy-app.yaml")
	tg, err := target.Open(file, "balancer.1.backend.idle_timeout", "envoy-node", "", true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tg.Plan(4)
	if err != nil {
		t.Fatal(err)
	}
	bs := plantest.OnlyRun(t, p).Settings.Balancers()
	if len(bs) != 2 || time.Duration(bs[1].Backend.IdleTimeout) != 4*time.Second || time.Duration(bs[0].Backend.IdleTimeout) != time.Minute || bs[1].Preset != "envoy" {
		t.Errorf("the chain after --param balancer.1.backend.idle_timeout=4s: %+v %+v", *bs[0], *bs[1])
	}
	for _, c := range []struct{ param, want string }{
		{"balancer.backend.idle_timeout", "--param balancer.backend.idle_timeout: the run's balancer is a list of 2 balancers (a chain); name one by its place from the client, from 0: --param balancer.0.backend.idle_timeout to balancer.1.backend.idle_timeout"},
		{"balancer.2.idle_timeout", "--param balancer.2.idle_timeout: the run's balancer is a list of 2 balancers; N counts from 0 (the balancer nearest the client) to 1"},
		{"balancer.-1.idle_timeout", "--param balancer.-1.idle_timeout: a balancer's place N counts from 0, the balancer nearest the client"},
	} {
		if _, err := target.Open(file, c.param, "envoy-node", "", true); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.param, err, c.want)
		}
	}
	st := tg.Base.Settings
	pr := geometry.Predict("server.idle_timeout", st, []int64{st.Load.Seed})
	// The last balancer's pool (1 h) never drops first: the longest pause, 6.4 s, plus the
	// round trips in front of Envoy (20 ms + 2 ms) plus Envoy's own 400 ms.
	if pr == nil || math.Abs(pr.Bound-6.822) > 1e-9 || !strings.Contains(pr.Rule, "the round trips in front of the last balancer") {
		t.Errorf("the geometry behind the chain: %+v, want the bound 6.822 s at the last balancer", pr)
	}
}
