package client

import (
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
)

// pooledLifetime decides whether a connection whose response just completed goes back to
// the pool and for how long. life 0 with pool true means no idle limit.
func pooledLifetime(cfg *Config, hint time.Duration, hasHint bool) (life time.Duration, pool bool) {
	base := cfg.IdleTimeout
	if fault.On(fault.ClientIdleIgnored) {
		base = 0 // no idle limit of the client's own
	}
	if !cfg.HonorHint || !hasHint || fault.On(fault.HintIgnored) {
		return base, true
	}
	if cfg.HintUnit > 0 && cfg.HintUnit != time.Second {
		hint = time.Duration(float64(hint) / float64(time.Second) * float64(cfg.HintUnit))
	}
	buffer := cfg.HintBuffer
	if cfg.HintParser == HintUndici && fault.On(fault.UndiciHintThreshold1s) {
		buffer = time.Second // undici's keepAliveTimeoutThreshold before nodejs/undici#3145
	}
	h := hint - buffer
	if h <= 0 {
		return 0, false
	}
	if cfg.HintParser == HintUndici {
		// undici: the hint replaces keepAliveTimeout, capped by keepAliveMaxTimeout.
		if cfg.HintMax > 0 && h > cfg.HintMax {
			h = cfg.HintMax
		}
		return h, true
	}
	// Node: the hint only ever shortens the agent's own timeout. An agent without one
	// (new Agent({keepAlive: true}): timeout 0) keeps the socket until the server closes it,
	// whatever the hint says, as long as hint - buffer > 0. lib/_http_agent.js
	// keepSocketAlive (Node 20.20.2, printed by
	// `node -e "console.log(require('http').Agent.prototype.keepSocketAlive.toString())"`):
	//   if (serverHintTimeout === 0) canKeepSocketAlive = false;
	//   else if (serverHintTimeout < agentTimeout) agentTimeout = serverHintTimeout;
	if base > 0 && h < base {
		return h, true
	}
	return base, true
}
