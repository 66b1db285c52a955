package help

import (
	"slices"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// help presets says, per preset, which metrics a truth file compares between the preset and
// the real program: read from the bundled files' compare checks, so a claim follows the
// files. A metric read only of the real run (python's tls_handshakes == 8) is not a
// comparison, and a preset no file pairs with a real program compares nothing.
func TestHelpPresetsSaysWhatIsCompared(t *testing.T) {
	t.Parallel()
	cases := []struct {
		preset   string
		server   bool
		want     []string
		wantNot  []string
		verified string
	}{
		{preset: "curl-multi", want: []string{"connections", "errors", "hidden_retries", "latency_ms.p50"}},
		{preset: "python-requests", want: []string{"connections", "errors", "tls_resumed"}, wantNot: []string{"tls_handshakes"}},
		{preset: "node", server: true, want: []string{"connections", "server_idle_close_ms.p50"}},
		{preset: "go-default", want: []string{"connections", "errors", "failed_attempts", "hidden_retries", "latency_ms.p50", "tls_handshakes", "tls_resumed"}},
		{preset: "nginx", server: true, want: []string{"connections", "server_idle_close_ms.p50"}},
		{preset: "go", server: true},
		// plan_reaches('model-race-50', 'real-race-50') weighs the three counts of both.
		{preset: "undici", want: []string{"connections", "errors", "failed_bursts_mask"}},
	}
	for _, tc := range cases {
		reg := scenario.ClientPresets
		if tc.server {
			reg = scenario.ServerPresets
		}
		p, ok := reg[tc.preset]
		if !ok {
			t.Fatalf("no preset %s", tc.preset)
		}
		got := presetCompared(tc.preset, p.Verified, tc.server)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: compared %v, want %s among them", tc.preset, got, w)
			}
		}
		for _, w := range tc.wantNot {
			if slices.Contains(got, w) {
				t.Errorf("%s: compared %v, must not list %s (read of the real run only)", tc.preset, got, w)
			}
		}
		line := comparedLine(tc.preset, p.Verified, tc.server)
		if len(tc.want) == 0 && !strings.Contains(line, "nothing") {
			t.Errorf("%s: %q, want nothing compared", tc.preset, line)
		}
	}
}
