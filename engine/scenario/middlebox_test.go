package scenario

import (
	"strings"
	"testing"
	"time"
)

func TestMiddleboxSection(t *testing.T) {
	src := `name: t
middlebox: {preset: aws-nat-gateway}
client: {tcp_keepalive: {idle: 60s}}
variants:
  - name: nat
  - name: nat-300
    middlebox: {idle_timeout: 300s}
  - name: azure
    middlebox: {preset: azure-lb-tcp-reset}
`
	byName := settingsByVariant(t, src)
	want := map[string]Middlebox{
		"nat":     {Preset: "aws-nat-gateway", IdleTimeout: Duration(350 * time.Second), OnExpiry: "reset", ResetAt: "next-segment", ResetTo: "client"},
		"nat-300": {Preset: "aws-nat-gateway", IdleTimeout: Duration(300 * time.Second), OnExpiry: "reset", ResetAt: "next-segment", ResetTo: "client"},
		"azure":   {Preset: "azure-lb-tcp-reset", IdleTimeout: Duration(4 * time.Minute), OnExpiry: "reset", ResetAt: "expiry", ResetTo: "both"},
	}
	for name, w := range want {
		if m := byName[name].Middlebox; m == nil || *m != w {
			t.Errorf("%s: %+v, want %+v", name, m, w)
		}
	}
	// The file's idle wins; interval and count keep Linux's defaults.
	if ka := byName["nat"].Client.TCPKeepalive; ka != (TCPKeepalive{Idle: Duration(time.Minute), Interval: Duration(75 * time.Second), Count: 9}) {
		t.Errorf("tcp_keepalive %+v", ka)
	}
	one, diags := Parse("one.yaml", []byte("name: one\n"))
	if len(diags) > 0 || one.Runs[0].Settings.Middlebox != nil || one.Runs[0].Settings.Client.TCPKeepalive.Idle != 0 {
		t.Fatalf("a file without a middlebox got one, or TCP keepalive: %v %+v", diags, one.Runs[0].Settings)
	}
}

// Each client preset says what its runtime does with TCP keepalive.
func TestClientPresetsKeepalive(t *testing.T) {
	want := map[string]time.Duration{"node-agent": time.Second, "node-global-agent": time.Second, "node-agent-default": 0,
		"undici": time.Minute, "go-default": 30 * time.Second, "python-requests": 0, "curl-loop": time.Minute, "curl-multi": time.Minute,
		// QUIC runs on UDP: no TCP keepalive; its PINGs are client.quic.keepalive_period.
		"chromium": 0, "quic-go-http3": 0}
	for name := range ClientPresets {
		w, ok := want[name]
		if !ok {
			t.Errorf("client preset %s: no TCP keepalive expectation here; add one with its source", name)
			continue
		}
		s, diags := Parse("p.yaml", []byte("name: p\nclient: {preset: "+name+"}\n"))
		if len(diags) > 0 {
			t.Fatal(diags)
		}
		if got := s.Runs[0].Settings.Client.TCPKeepalive.Idle.D(); got != w {
			t.Errorf("%s: tcp_keepalive.idle %v, want %v", name, got, w)
		}
		if !strings.Contains(ClientPresets[name].Source, "keepalive") {
			t.Errorf("%s: the source does not say where its TCP keepalive comes from", name)
		}
	}
}

func TestMiddleboxErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"name: t\nmiddlebox: {preset: pfsense}\n", "t.yaml:2:21: middlebox.preset:"},
		{"name: t\nmiddlebox: {on_expiry: forget}\n", "t.yaml:2:24:"},
		{"name: t\nmiddlebox: {reset_to: nobody}\n", "t.yaml:2:23:"},
		{"name: t\nclient: {tcp_keepalive: {count: 0}}\n", "t.yaml:2:33: client.tcp_keepalive.count:"},
		// An optional section's durations are scaled and bounded like the rest.
		{"name: t\ntime_scale: 100\nmiddlebox: {idle_timeout: 100000h}\n", "t.yaml:3:27: middlebox.idle_timeout:"},
	} {
		_, diags := Parse("t.yaml", []byte(tc.src))
		if len(diags) == 0 || !strings.HasPrefix(diags[0].String(), tc.want) {
			t.Errorf("%q: %v, want %q...", tc.src, diags, tc.want)
		}
	}
}
