//go:build race

package htmlreport

const raceDetector = true
