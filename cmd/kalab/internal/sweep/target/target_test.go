package target

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

// The value lands in the swept variant, over the file's and the variant's own setting;
// the other variants and the compare checks go; --until replaces every check.
func TestTargetSetsTheValueInTheRun(t *testing.T) {
	t.Parallel()
	tg, err := Open(plantest.Bundled("04-stale-race.yaml"), "client.idle_timeout", "idle-1900", "errors == 0", true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tg.Plan(1.84375)
	if err != nil {
		t.Fatal(err)
	}
	r := plantest.OnlyRun(t, p)
	if r.Variant != "idle-1900" || time.Duration(r.Settings.Client.IdleTimeout) != 1843750*time.Microsecond {
		t.Errorf("run %s, client idle %v; want idle-1900 at 1.84375s", r.Variant, r.Settings.Client.IdleTimeout)
	}
	if r.Settings.Client.Preset != "node-agent" || time.Duration(r.Settings.Server.IdleTimeout) != 2*time.Second {
		t.Errorf("the rest of the file changed: %+v", r.Settings)
	}
	if len(r.Expect) != 1 || r.Expect[0].Source != "errors == 0" || len(p.Scenarios[0].Compare) != 0 {
		t.Errorf("checks %v, compare %v; want only errors == 0", r.Expect, p.Scenarios[0].Compare)
	}

	// Without --until the run keeps its own checks (the file's and the variant's).
	own, err := Open(plantest.Bundled("04-stale-race.yaml"), "client.idle_timeout", "node-agent", "", true)
	if err != nil {
		t.Fatal(err)
	}
	p, err = own.Plan(1.5)
	if err != nil {
		t.Fatal(err)
	}
	if r := plantest.OnlyRun(t, p); len(r.Expect) != 2 || !strings.HasPrefix(r.Expect[0].Source, "errors >= 12") {
		t.Errorf("checks %v; want the variant's two", r.Expect)
	}
}

func TestTargetOtherFields(t *testing.T) {
	t.Parallel()
	file := plantest.Bundled("12-alb-backend-race.yaml")
	cases := []struct {
		param    string
		duration bool
		v        float64
		get      func(scenario.Settings) float64
	}{
		{"server.idle_timeout", true, 6.5, func(s scenario.Settings) float64 { return time.Duration(s.Server.IdleTimeout).Seconds() }},
		{"balancer.backend.idle_timeout", true, 5.5, func(s scenario.Settings) float64 { return time.Duration(s.Balancer.Backend.IdleTimeout).Seconds() }},
		{"balancer.backend_network.rtt", true, 0.25, func(s scenario.Settings) float64 { return time.Duration(s.Balancer.BackendNetwork.RTT).Seconds() }},
		{"load.pause.min", true, 5.5, func(s scenario.Settings) float64 { return time.Duration(s.Load.Pause.Min).Seconds() }},
		{"load.pause.max", true, 7, func(s scenario.Settings) float64 { return time.Duration(s.Load.Pause.Max).Seconds() }},
		{"client.max_idle", false, 3, func(s scenario.Settings) float64 { return float64(s.Client.MaxIdle) }},
		{"client.retry", false, 1, func(s scenario.Settings) float64 { return float64(s.Client.Retry.Attempts) }},
	}
	for _, c := range cases {
		tg, err := Open(file, c.param, "nginx-get", "", c.duration)
		if err != nil {
			t.Fatalf("%s: %v", c.param, err)
		}
		p, err := tg.Plan(c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.param, err)
		}
		st := plantest.OnlyRun(t, p).Settings
		if got := c.get(st); math.Abs(got-c.v) > 1e-9 {
			t.Errorf("%s: set %v, the run has %v", c.param, c.v, got)
		}
		if st.Balancer == nil || st.Balancer.Preset != "nginx-proxy" {
			t.Errorf("%s: the variant's balancer preset was lost: %+v", c.param, st.Balancer)
		}
	}
}

func TestTargetErrors(t *testing.T) {
	t.Parallel()
	file := plantest.Bundled("04-stale-race.yaml")
	if _, err := Open(file, "client.idle_timeout", "", "", true); err == nil || !strings.Contains(err.Error(), "--run (node-agent, undici") {
		t.Errorf("no --run on a file of five runs: %v", err)
	}
	if _, err := Open(file, "client.idle_timeout", "nope", "", true); err == nil || !strings.Contains(err.Error(), `no run "nope"`) {
		t.Errorf("an unknown run: %v", err)
	}
	tg, err := Open(file, "client.max_idle", "node-agent", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Plan(1.5); err == nil || !strings.Contains(err.Error(), "--param client.max_idle=1.5s: variants[0].client.max_idle: \"1.5s\" is not a whole number") {
		t.Errorf("a duration in a count: %v", err)
	}
}
