//go:build !unix

package kernel

import (
	"errors"
	"net"
)

// ListenBacklog is not available: Windows gives no portable way to set a listener's
// backlog from Go and does not drop SYNs the way the model needs.
func ListenBacklog(*net.TCPAddr, int) (*net.TCPListener, error) {
	return nil, errors.New("a listen backlog that drops SYNs is modelled on Unix only")
}
