package scenario

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A middlebox list is a chain: each box decodes onto the defaults and its own preset, in
// path order; a list of one is the lone box; the record's params keep a lone box's object
// and write a chain as the list.
func TestMiddleboxChainDecodes(t *testing.T) {
	src := `name: t
server: {idle_timeout: none}
middlebox:
  - {preset: aws-nlb}
  - {preset: kube-ipvs, on_expiry: reset}
  - {idle_timeout: 60s}
variants:
  - name: chain
  - name: one
    middlebox: [{preset: kube-conntrack}]
`
	by := settingsByVariant(t, src)
	want := []Middlebox{
		{Preset: "aws-nlb", IdleTimeout: Duration(350 * time.Second), OnExpiry: "reset", ResetAt: "next-segment", ResetTo: "both"},
		{Preset: "kube-ipvs", IdleTimeout: Duration(900 * time.Second), OnExpiry: "reset", ResetAt: "expiry", ResetTo: "both"},
		{IdleTimeout: Duration(60 * time.Second), OnExpiry: "drop", ResetAt: "expiry", ResetTo: "both"},
	}
	got := by["chain"].Middleboxes()
	if len(got) != len(want) || by["chain"].Middlebox != got[0] {
		t.Fatalf("chain: %d boxes, first %p of %p; want %d, the first as Middlebox", len(got), by["chain"].Middlebox, got[0], len(want))
	}
	for i := range want {
		if *got[i] != want[i] {
			t.Errorf("box %d: %+v, want %+v", i, *got[i], want[i])
		}
	}
	params := func(name string) string { return paramsAt(t, by[name], "middlebox") }
	if p := params("chain"); !strings.HasPrefix(p, `[{"preset":"aws-nlb"`) || strings.Count(p, `"idle_timeout"`) != 3 {
		t.Errorf("a chain's params: %s, want the list of three", p)
	}
	if p := params("one"); !strings.HasPrefix(p, `{"preset":"kube-conntrack"`) || len(by["one"].MiddleboxChain) != 0 {
		t.Errorf("a list of one's params: %s, want the lone box's object", p)
	}
	lone, diags := Parse("t.yaml", []byte("name: t\nmiddlebox: {preset: aws-nat-gateway}\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	by["object"] = lone.Runs[0].Settings
	if p := params("object"); p != `{"preset":"aws-nat-gateway","idle_timeout":"5m50s","on_expiry":"reset","reset_at":"next-segment","reset_to":"client"}` {
		t.Errorf("a lone object's params changed: %s", p)
	}
}

// What a chain cannot do is refused where it is written.
func TestMiddleboxChainRefusals(t *testing.T) {
	for name, c := range map[string]struct{ src, want string }{
		"http3": {`name: t
server: {http: "3", idle_timeout: 30s}
middlebox: [{idle_timeout: 10s, on_expiry: drop}, {idle_timeout: 20s, on_expiry: drop}]
`, `t.yaml:3:12: middlebox: a chain of 2 boxes is modelled for TCP flows only`},
		"too many": {`name: t
middlebox: [{idle_timeout: 1s}, {idle_timeout: 1s}, {idle_timeout: 1s}, {idle_timeout: 1s}, {idle_timeout: 1s}, {idle_timeout: 1s}]
`, `t.yaml:2:12: middlebox: `},
		"unknown field": {`name: t
middlebox:
  - {preset: aws-nlb}
  - {idle_timout: 2s}
`, `t.yaml:4:6: middlebox[1].idle_timout: unknown field "idle_timout" (did you mean idle_timeout?)`},
		"no timeout": {`name: t
middlebox:
  - {idle_timeout: 1s}
  - {idle_timeout: none, on_expiry: reset}
`, `t.yaml:4:37: middlebox[1].on_expiry: never applies: middlebox[1].idle_timeout is 0`},
		"udp preset": {`name: t
middlebox: [{preset: aws-nlb}, {preset: linux-conntrack-udp}]
`, `t.yaml:2:41: middlebox[1].preset: models a box's UDP flows`},
		"variant object": {`name: t
middlebox: [{preset: aws-nlb}, {preset: kube-ipvs}]
variants:
  - name: v
    middlebox: {idle_timeout: 10s}
`, `t.yaml:5:16: middlebox: the file's middlebox is a list`},
		"matrix": {`name: t
middlebox: [{preset: aws-nlb}, {preset: kube-ipvs}]
matrix:
  middlebox.idle_timeout: [10s, 20s]
`, `t.yaml:4:3: matrix: a matrix cannot vary middlebox.idle_timeout`},
	} {
		_, diags := Parse("t.yaml", []byte(c.src))
		if len(diags) == 0 || !strings.HasPrefix(diags[0].String(), c.want) {
			t.Errorf("%s: %v, want %q", name, diags, c.want)
		}
	}
}

// A balancer list is a chain: each balancer decodes onto the defaults and its own preset,
// in path order; Balancer is the first (the one the client meets), ServerBalancer the
// last; a list of one is the lone balancer; the params write a chain as the list.
func TestBalancerChainDecodes(t *testing.T) {
	src := `name: t
balancer:
  - {preset: aws-alb, backend_network: {rtt: 2ms}}
  - {preset: envoy, backend: {idle_timeout: 4s}, deregistration_delay: 30s}
variants:
  - name: chain
  - name: one
    balancer: [{preset: ingress-nginx}]
`
	by := settingsByVariant(t, src)
	chain := by["chain"]
	bs := chain.Balancers()
	if len(bs) != 2 || chain.Balancer != bs[0] || chain.ServerBalancer() != bs[1] {
		t.Fatalf("chain: %d balancers, Balancer %p, ServerBalancer %p; want 2, the first and the last", len(bs), chain.Balancer, chain.ServerBalancer())
	}
	if b := bs[0]; b.Preset != "aws-alb" || b.IdleTimeout != Duration(60*time.Second) || b.BackendNetwork.RTT != Duration(2*time.Millisecond) || b.ErrorStatus != 502 {
		t.Errorf("balancer 0: %+v, want aws-alb's 60 s and 502 with the file's 2 ms", *b)
	}
	if b := bs[1]; b.Preset != "envoy" || b.IdleTimeout != Duration(time.Hour) || b.Backend.IdleTimeout != Duration(4*time.Second) ||
		!b.Backend.KeepAlive || b.ErrorStatus != 503 || b.DeregistrationDelay != Duration(30*time.Second) {
		t.Errorf("balancer 1: %+v, want envoy's 1 h and 503 with the file's 4 s pool and 30 s delay", *b)
	}
	one := by["one"]
	if len(one.Balancers()) != 1 || one.BalancerChain != nil || one.Balancer.Preset != "ingress-nginx" {
		t.Errorf("a list of one: %+v, want the lone ingress-nginx", one.Balancers())
	}
	params := func(st Settings) string { return paramsAt(t, st, "balancer") }
	if p := params(chain); !strings.HasPrefix(p, `[{"preset":"aws-alb"`) || strings.Count(p, `"preset"`) != 2 {
		t.Errorf("a chain's params: %s, want the list of two", p)
	}
	if p := params(one); !strings.HasPrefix(p, `{"preset":"ingress-nginx"`) {
		t.Errorf("a lone balancer's params: %s, want its object", p)
	}
	var paths []string
	for _, d := range durationFields(chain) {
		if strings.HasPrefix(d.path, "balancer") && strings.HasSuffix(d.path, ".idle_timeout") && !strings.Contains(d.path, "backend") {
			paths = append(paths, d.path)
		}
	}
	if strings.Join(paths, " ") != "balancer[0].idle_timeout balancer[1].idle_timeout" {
		t.Errorf("the chain's idle_timeout durations are at %v, want each balancer's by its index", paths)
	}
}

// settingsByVariant parses src and returns each run's settings by its variant's name.
func settingsByVariant(t *testing.T, src string) map[string]Settings {
	t.Helper()
	s, diags := Parse("t.yaml", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	by := map[string]Settings{}
	for _, r := range s.Runs {
		by[r.Variant] = r.Settings
	}
	return by
}

// paramsAt is the JSON the run record's params write under key for st.
func paramsAt(t *testing.T, st Settings, key string) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[key])
}
