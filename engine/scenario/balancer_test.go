package scenario

import (
	"strings"
	"testing"
	"time"
)

func TestBalancerSection(t *testing.T) {
	src := `name: t
server: {preset: node}
balancer:
  preset: nginx-proxy
  backend: {idle_timeout: 70s}
  backend_network: {rtt: 2ms}
variants:
  - name: nginx
  - name: error
    balancer: {on_backend_error: error}
  - name: alb
    balancer: {preset: aws-alb}
`
	byName := settingsByVariant(t, src)
	n := byName["nginx"].Balancer
	if n == nil {
		t.Fatal("no balancer decoded")
	}
	// The file's value wins over the preset; the preset's over the defaults.
	if n.Backend.IdleTimeout.D() != 70*time.Second || n.Backend.MaxIdle != 16 || n.OnBackendError != "retry_idempotent" ||
		n.IdleTimeout.D() != 75*time.Second || n.BackendNetwork.RTT.D() != 2*time.Millisecond || n.Backend.Timeout.D() != 30*time.Second {
		t.Errorf("nginx run: %+v", *n)
	}
	if e := byName["error"].Balancer; e.OnBackendError != "error" || e.Backend.MaxIdle != 16 {
		t.Errorf("error run: %+v", *e)
	}
	// A preset chosen in a variant is still below what the file sets.
	if a := byName["alb"].Balancer; a.Backend.IdleTimeout.D() != 70*time.Second || a.IdleTimeout.D() != 60*time.Second || a.OnBackendError != "error" {
		t.Errorf("alb run: %+v", *a)
	}
	// Each run owns its balancer.
	if byName["nginx"].Balancer == byName["error"].Balancer {
		t.Error("runs share one Balancer")
	}

	one, diags := Parse("one.yaml", []byte("name: one\n"))
	if len(diags) > 0 || one.Runs[0].Settings.Balancer != nil {
		t.Fatalf("a single-hop file got a balancer: %v %+v", diags, one.Runs[0].Settings.Balancer)
	}
}

func TestBalancerErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"name: t\nbalancer: {preset: f5}\n", "t.yaml:2:20: balancer.preset:"},
		{"name: t\nbalancer:\n  on_backend_error: retry\n", "t.yaml:3:21: balancer.on_backend_error:"},
		{"name: t\nbalancer:\n  backend: {idle_timout: 5s}\n", "t.yaml:3:13: balancer.backend.idle_timout: unknown field"},
		{"name: t\nbalancer:\n  backend_network: {rtt: 5}\n", "t.yaml:3:26: balancer.backend_network.rtt:"},
		{"name: t\nbalancer:\n  error_status: 200\n", "t.yaml:3:17: balancer.error_status:"},
		{"name: t\nserver: {tls: true}\nbalancer: {preset: aws-alb}\n", "t.yaml:2:15: server.tls: the balancer speaks plain HTTP/1.1"},
		{"name: t\nserver: {http: \"2\"}\nbalancer: {preset: aws-alb}\n", "t.yaml:2:16: server.http: the balancer speaks plain HTTP/1.1"},
		{"name: t\nbalancer: {preset: aws-alb}\nclient: {http2_prior: true}\n", "unknown field"},
		{"name: t\nbalancer: {preset: aws-alb}\nclient:\n  exec: {command: [./c]}\n", "t.yaml:4:9: client.exec: a real client behind the balancer is not supported yet"},
	} {
		_, diags := Parse("t.yaml", []byte(tc.src))
		got := diags.Error()
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, got, tc.want)
		}
	}
}

// A matrix may vary balancer fields, and may add the balancer to a single-hop file.
func TestBalancerMatrix(t *testing.T) {
	s, diags := Parse("m.yaml", []byte(`name: m
matrix:
  balancer.backend.idle_timeout: [5s, 65s]
  balancer.preset: [aws-alb, envoy]
`))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if len(s.Runs) != 4 {
		t.Fatalf("%d runs, want 4", len(s.Runs))
	}
	for _, r := range s.Runs {
		b := r.Settings.Balancer
		if b == nil {
			t.Fatalf("run %s has no balancer", r.Variant)
		}
		want, err := ParseDuration(r.Matrix["balancer.backend.idle_timeout"])
		if err != nil {
			t.Fatal(err)
		}
		if b.Backend.IdleTimeout != want {
			t.Errorf("run %s: backend idle %v, want %s (the matrix wins over the preset)", r.Variant, b.Backend.IdleTimeout, want)
		}
		if wantStatus := map[string]int{"aws-alb": 502, "envoy": 503}[r.Matrix["balancer.preset"]]; b.ErrorStatus != wantStatus {
			t.Errorf("run %s: error status %d, want %d", r.Variant, b.ErrorStatus, wantStatus)
		}
	}
}
