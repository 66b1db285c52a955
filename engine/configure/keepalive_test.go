package configure

import (
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// TCP keepalive reaches the kernel in whole seconds: a scaled value is rounded up, and a
// run whose rounding lets a middlebox's flow expire that the written value keeps alive is
// refused.
func TestTCPKeepaliveScaled(t *testing.T) {
	t.Parallel()
	box := &scenario.Middlebox{IdleTimeout: scenario.Duration(350 * time.Second)}
	for _, tc := range []struct {
		name          string
		idle, intvl   time.Duration
		scale         shape.Scale
		mb            *scenario.Middlebox
		wantIdle, int time.Duration
		refused       bool
	}{
		{"off", 0, 75 * time.Second, 0.004, box, 0, 0, false},
		{"real time", 60 * time.Second, 75 * time.Second, 1, nil, 60 * time.Second, 75 * time.Second, false},
		{"rounded up", 60 * time.Second, 60 * time.Second, 0.004, box, time.Second, time.Second, false},                // 0.24 s -> 1 s = 250 s < 350 s
		{"rounding flips", 60 * time.Second, 60 * time.Second, 0.002, box, time.Second, time.Second, true},             // 1 s = 500 s >= 350 s
		{"written already too long", 400 * time.Second, 60 * time.Second, 0.002, box, time.Second, time.Second, false}, // the flow expires either way
		{"no middlebox", 60 * time.Second, 60 * time.Second, 0.002, nil, time.Second, time.Second, false},
		{"fraction", 1500 * time.Millisecond, 75 * time.Second, 1, nil, 2 * time.Second, 75 * time.Second, false},
	} {
		st := scenario.Settings{Middlebox: tc.mb}
		st.Client.TCPKeepalive = scenario.TCPKeepalive{Idle: scenario.Duration(tc.idle), Interval: scenario.Duration(tc.intvl), Count: 9}
		cfg, err := TCPKeepalive(st, tc.scale)
		if (err != nil) != tc.refused || (err != nil && !strings.Contains(err.Error(), "time_scale")) {
			t.Errorf("%s: error %v, refused %v", tc.name, err, tc.refused)
		}
		if cfg.Enable != (tc.idle > 0) || cfg.Idle != tc.wantIdle || cfg.Interval != tc.int || (tc.idle > 0 && cfg.Count != 9) {
			t.Errorf("%s: %+v, want idle %v interval %v", tc.name, cfg, tc.wantIdle, tc.int)
		}
	}
}
