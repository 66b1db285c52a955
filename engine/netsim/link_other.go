//go:build !unix

package netsim

import (
	"errors"
	"io"
	"net"
	"time"
)

// openReader returns the function readLoop calls for each chunk. Without
// a Unix socket API (Windows) it reads through net.Conn: a pooled buffer
// is held while the read waits, so an idle link pins one (16 KiB), and
// chunks are stamped when the read returns, which adds the reader's
// wake-up latency to the modeled delay.
func (d *direction) openReader() (func() (buf *[]byte, n int, stamp time.Time, err error), error) {
	return func() (*[]byte, int, time.Time, error) {
		b := bufPool.Get().(*[]byte)
		n, err := d.src.Read(*b)
		stamp := time.Now()
		if errors.Is(err, io.EOF) && n == 0 {
			err = nil // an orderly FIN, as readLoop expects it
		}
		return b, n, stamp, err
	}, nil
}

// sockErrIsReset cannot read SO_ERROR portably here, so it reports no
// reset: a write racing a peer's close is then seen when the next read
// fails rather than at once.
func sockErrIsReset(*net.TCPConn) bool { return false }

// rawWriter has no non-blocking write here: every release goes to a
// writer goroutine, which writes through net.Conn.
type rawWriter struct{}

func (*rawWriter) write(*net.TCPConn, []byte) (int, bool) { return 0, false }
