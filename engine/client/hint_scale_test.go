package client

import (
	"testing"
	"time"
)

// Under a time scale the server still writes "timeout=N" in scenario seconds; HintUnit
// turns N back into scaled time, so the same hint means the same thing at every scale.
func TestHintUnitScalesTheHint(t *testing.T) {
	t.Parallel()
	// Node's global agent (timeout 5 s): timeout=5 minus the 1 s buffer shortens it to 4 s.
	for _, tc := range []struct {
		unit, buffer, idle, want time.Duration
		pool                     bool
	}{
		{0, time.Second, 5 * time.Second, 4 * time.Second, true},                                               // unscaled: 5 s - 1 s
		{100 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, 400 * time.Millisecond, true}, // scale 0.1
		{10 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 40 * time.Millisecond, true},     // scale 0.01
	} {
		cfg := &Config{HonorHint: true, HintParser: HintNode, HintBuffer: tc.buffer, HintUnit: tc.unit, IdleTimeout: tc.idle}
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

// Node's rule, case by case: the hint (minus the buffer) replaces the agent timeout only when
// it is shorter; an agent with no timeout ignores any hint that leaves something after the
// buffer, and no hint can lengthen a timeout. undici's hint replaces keepAliveTimeout.
func TestHintRulePerClient(t *testing.T) {
	t.Parallel()
	node := func(idle time.Duration) *Config {
		return &Config{HonorHint: true, HintParser: HintNode, HintBuffer: time.Second, IdleTimeout: idle}
	}
	undici := &Config{HonorHint: true, HintParser: HintUndici, HintBuffer: 2 * time.Second, IdleTimeout: 4 * time.Second, HintMax: 600 * time.Second}
	for _, tc := range []struct {
		name string
		cfg  *Config
		hint time.Duration
		life time.Duration // 0: no idle limit
		pool bool
	}{
		{"agent without timeout, timeout=5", node(0), 5 * time.Second, 0, true},
		{"agent without timeout, timeout=60", node(0), 60 * time.Second, 0, true},
		{"agent without timeout, timeout=1", node(0), time.Second, 0, false},
		{"global agent 5 s, timeout=5", node(5 * time.Second), 5 * time.Second, 4 * time.Second, true},
		{"global agent 5 s, timeout=60", node(5 * time.Second), 60 * time.Second, 5 * time.Second, true},
		{"global agent 5 s, timeout=1", node(5 * time.Second), time.Second, 0, false},
		{"undici, timeout=5", undici, 5 * time.Second, 3 * time.Second, true},
		{"undici, timeout=60", undici, 60 * time.Second, 58 * time.Second, true},
		{"undici, timeout=2", undici, 2 * time.Second, 0, false},
	} {
		life, pool := pooledLifetime(tc.cfg, tc.hint, true)
		if pool != tc.pool || (pool && life != tc.life) {
			t.Errorf("%s: lifetime %v pooled %v; want %v %v", tc.name, life, pool, tc.life, tc.pool)
		}
	}
}
