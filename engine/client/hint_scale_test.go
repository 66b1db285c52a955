package client

import (
	"testing"
	"time"
)

// Under a time scale the server still writes "timeout=N" in scenario seconds; HintUnit
// turns N back into scaled time, so the same hint means the same thing at every scale.
func TestHintUnitScalesTheHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		unit, buffer, want time.Duration
		pool               bool
	}{
		{0, time.Second, 4 * time.Second, true},                                        // unscaled: 5 s - 1 s
		{100 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond, true}, // scale 0.1
		{10 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond, true},    // scale 0.01
	} {
		cfg := &Config{HonorHint: true, HintParser: HintNode, HintBuffer: tc.buffer, HintUnit: tc.unit}
		life, pool := pooledLifetime(cfg, 5*time.Second, true)
		if life != tc.want || pool != tc.pool {
			t.Errorf("unit %v: lifetime %v pooled %v; want %v %v", tc.unit, life, pool, tc.want, tc.pool)
		}
	}
	// timeout=1 minus Node's buffer is nothing at any scale.
	cfg := &Config{HonorHint: true, HintParser: HintNode, HintBuffer: 100 * time.Millisecond, HintUnit: 100 * time.Millisecond}
	if _, pool := pooledLifetime(cfg, time.Second, true); pool {
		t.Error("timeout=1 with a 1 s buffer was pooled at scale 0.1")
	}
}
