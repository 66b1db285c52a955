//go:build !race

package testci

const raceOn = false
