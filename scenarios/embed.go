// Package scenarios holds kalab's bundled suite, embedded so that `kalab run builtin:`
// works from any directory.
package scenarios

import "embed"

// Files is every bundled scenario file: the suite and truth/.
//
//go:embed *.yaml truth/*.yaml
var Files embed.FS
