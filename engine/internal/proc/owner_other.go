//go:build !linux

package proc

// ListenHolders: only Linux says who holds a socket.
func ListenHolders(int) ([]Holder, int, error) { return nil, 0, ErrUnsupported }
