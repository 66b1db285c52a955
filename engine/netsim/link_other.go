//go:build !unix

package netsim

import (
	"errors"
	"io"
	"time"
)

// openReader returns the chunkReader of readLoop. Without a Unix socket
// API (Windows) it reads through net.Conn: a pooled buffer is held while
// the read waits, so an idle link pins one (16 KiB), and chunks are stamped
// when the read returns, which adds the reader's wake-up latency to the
// modeled delay.
func (d *direction) openReader() (chunkReader, error) {
	return func(take func(*[]byte, int, time.Time) bool) (time.Time, bool, error) {
		for {
			b := bufPool.Get().(*[]byte)
			n, err := d.src.Read(*b)
			stamp := time.Now()
			if n > 0 {
				if !take(b, n, stamp) {
					return stamp, true, nil
				}
			} else {
				bufPool.Put(b)
			}
			if errors.Is(err, io.EOF) {
				return stamp, false, nil // an orderly FIN, as readLoop expects it
			}
			if err != nil {
				return stamp, false, err
			}
		}
	}, nil
}
