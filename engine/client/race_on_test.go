//go:build race

package client

// raceEnabled: under the race detector sync.Pool drops a share of what it is given on
// purpose, so a count of objects the pool saved means nothing there.
const raceEnabled = true
