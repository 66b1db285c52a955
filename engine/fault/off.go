//go:build !kalabfault

package fault

// On reports whether the named fault is active: never, without the kalabfault build tag.
func On(string) bool { return false }
