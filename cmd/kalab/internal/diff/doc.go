// Package diff renders a comparison with a baseline: kalab diff's table and JSON document,
// and the baseline summary kalab run and kalab merge print after their own.
package diff
