//go:build race

package netsim

// raceEnabled: the race detector slows every byte the proxy copies several times over, so
// a transfer's duration measures the instrumentation, not the model.
const raceEnabled = true
