package proc

import (
	"errors"
	"fmt"
	"strings"
)

// Holder is a process that holds a listening socket.
type Holder struct {
	Pid  int
	Comm string // the process's name (/proc/<pid>/comm)
	Pgid int
}

func (h Holder) String() string { return fmt.Sprintf("pid %d (%s)", h.Pid, h.Comm) }

// ErrUnsupported says the system does not tell who holds a socket (only Linux does, in
// /proc); the caller then trusts the connection it made.
var ErrUnsupported = errors.New("the owner of a listening socket is known on Linux only")

// PortError says that a loopback port is held by a process outside the group kalab
// started.
type PortError struct {
	Port    int
	Holders []Holder // the foreign holders kalab could see
	Hidden  int      // listening sockets on the port whose holder kalab cannot see
}

func (e *PortError) Error() string {
	var who []string
	for _, h := range e.Holders {
		who = append(who, h.String())
	}
	if e.Hidden > 0 {
		who = append(who, fmt.Sprintf("%d socket(s) held by a process kalab cannot see (another user's)", e.Hidden))
	}
	if len(who) == 0 {
		return fmt.Sprintf("no process is listening on 127.0.0.1:%d", e.Port)
	}
	return fmt.Sprintf("port %d on 127.0.0.1 is held by %s, not by the program kalab started", e.Port, strings.Join(who, ", "))
}

// CheckOwner returns a *PortError unless every listening socket that a connection to
// 127.0.0.1:port can reach is held by processes of group pgid (and there is at least one).
// Where the system does not say, it returns ErrUnsupported.
func CheckOwner(port, pgid int) error {
	holders, hidden, err := ListenHolders(port)
	if err != nil {
		return err
	}
	pe := &PortError{Port: port, Hidden: hidden}
	ours := false
	for _, h := range holders {
		if h.Pgid == pgid {
			ours = true
			continue
		}
		pe.Holders = append(pe.Holders, h)
	}
	if len(pe.Holders) > 0 || hidden > 0 || !ours {
		return pe
	}
	return nil
}
