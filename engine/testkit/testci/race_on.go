//go:build race

package testci

// raceOn: this test binary runs under the race detector.
const raceOn = true
