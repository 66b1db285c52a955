//go:build !unix

package startcheck

// Check says nothing where there is no descriptor limit to read: the runs' budget decides.
func Check() string { return "" }
