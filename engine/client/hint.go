package client

import (
	"time"

	"github.com/kalab-dev/kalab/engine/internal/fault"
)

// maxHintSeconds bounds a parsed hint so N*time.Second cannot overflow.
const maxHintSeconds = 1 << 31

// parseHint reads a Keep-Alive header value the way the named real client does.
// Node applies /^timeout=(\d+)/ (so "max=100, timeout=5" is not read); undici applies
// /timeout=(\d+)/ anywhere in the value. Both are case-sensitive, like the originals.
func parseHint(value []byte, parser string) (time.Duration, bool) {
	const key = "timeout="
	at := -1
	if parser == HintUndici {
		for i := 0; i+len(key) <= len(value); i++ {
			if string(value[i:i+len(key)]) == key && i+len(key) < len(value) && isDigit(value[i+len(key)]) {
				at = i + len(key)
				break
			}
		}
	} else if len(value) > len(key) && string(value[:len(key)]) == key {
		at = len(key)
	}
	if at < 0 || !isDigit(value[at]) {
		return 0, false
	}
	var n int64
	for i := at; i < len(value) && isDigit(value[i]); i++ {
		if n < maxHintSeconds {
			n = n*10 + int64(value[i]-'0')
		}
	}
	if n > maxHintSeconds {
		n = maxHintSeconds
	}
	return time.Duration(n) * time.Second, true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

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
