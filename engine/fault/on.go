//go:build kalabfault

package fault

import "os"

// active is the fault KALAB_FAULT names in this process, read once.
var active = os.Getenv("KALAB_FAULT")

// On reports whether the named fault is active (kalabfault builds only).
func On(name string) bool { return active == name }
