package client

import (
	"fmt"
	"sort"
	"time"
)

// profiles mirror the client presets of engine/scenario (the registry users see) as
// Config values, so these tests exercise each real client's rules directly.
var profiles = map[string]Config{
	// Node >= 22.20 / 24.7, new http.Agent({keepAlive: true}): no agent timeout, hint read
	// with ^timeout=(\d+) minus agentKeepAliveTimeoutBuffer (1 s), scheduling lifo, no retry.
	"node-agent": {KeepAlive: true, HonorHint: true, HintParser: HintNode, HintBuffer: time.Second, Scheduling: LIFO},
	// Node new http.Agent(): keepAlive false, a new connection per request.
	"node-agent-default": {KeepAlive: false},
	// Node >= 19 global agent: keepAlive true, lifo, timeout 5000 ms, hint as node-agent.
	"node-global-agent": {KeepAlive: true, IdleTimeout: 5 * time.Second, HonorHint: true, HintParser: HintNode, HintBuffer: time.Second, Scheduling: LIFO},
	// undici >= 6.14.1 (Node fetch): keepAliveTimeout 4 s, hint via timeout=(\d+) minus
	// keepAliveTimeoutThreshold 2 s, capped by keepAliveMaxTimeout 600 s, no retry. Its Pool
	// dispatches to the first free client in creation order (creation.go).
	"undici": {KeepAlive: true, IdleTimeout: 4 * time.Second, HonorHint: true, HintParser: HintUndici, HintBuffer: 2 * time.Second, HintMax: 600 * time.Second, Scheduling: Creation},
	// Go net/http DefaultTransport: the real Transport, IdleConnTimeout 90 s, 2 idle per host.
	"go-default": {Implementation: ImplGoNetHTTP, KeepAlive: true, IdleTimeout: 90 * time.Second, MaxIdle: 2},
	// Python requests (urllib3 pool): no idle timeout, 10 kept per host, LIFO queue, drops
	// connections seen dead before reuse, no retry on a stale socket.
	"python-requests": {KeepAlive: true, MaxIdle: 10, Scheduling: LIFO, LivenessCheck: true},
	// curl run once per request: never reuses across processes.
	"curl-loop": {KeepAlive: false},
	// libcurl, one process: CURLOPT_MAXAGE_CONN 118 s, liveness check before reuse, re-send
	// (any method, up to 5 times) when a reused connection died before any response byte.
	// Which idle connection curl picks first is unverified; lifo is assumed.
	// The check takes a waiting TLS close_notify for a live connection, and the re-sends
	// are libcurl's own, invisible to the caller.
	"curl-multi": {KeepAlive: true, IdleTimeout: 118 * time.Second, LivenessCheck: true, LivenessEOFOnly: true, Scheduling: LIFO,
		Retry: RetryPolicy{Attempts: 5, On: []ErrorClass{ClassReset, ClassEOF}, ReusedOnly: true, ZeroBytesOnly: true, Hidden: true}},
}

// profile returns a copy of the named profile.
func profile(name string) (Config, error) {
	p, ok := profiles[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown client preset %q (known: %v)", name, profileNames())
	}
	p.Retry.On = append([]ErrorClass(nil), p.Retry.On...) // callers may edit their copy
	return p, nil
}

func profileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
