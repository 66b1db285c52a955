//go:build !race

package netsim

// raceEnabled: see race_on_test.go.
const raceEnabled = false
