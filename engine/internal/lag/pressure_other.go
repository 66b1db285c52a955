//go:build !linux

package lag

import "time"

// cpuStall is unknown off Linux: there is no pressure stall information.
func cpuStall() (time.Duration, bool) { return 0, false }
