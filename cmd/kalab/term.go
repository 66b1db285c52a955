package main

import (
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// isTerminal says whether w is an interactive terminal. A character device is not enough:
// /dev/null is one too, and must get plain output.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colorAllowed follows the conventions of https://no-color.org and of terminals that
// cannot draw: NO_COLOR set to anything non-empty, or TERM=dumb, turns colour off.
func colorAllowed() bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// canDrawBars says whether live progress bars may redraw lines on w: a terminal that
// understands cursor movement.
func canDrawBars(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("TERM") != "dumb"
}

// logSink is where a command's log lines go. While progress bars are drawn on the same
// terminal it sends them through the bars, which print them above themselves, so a
// redraw never overwrites a log line.
type logSink struct {
	mu  sync.Mutex
	w   io.Writer // the log's own output (stderr)
	via io.Writer // the bars, while they are drawn; nil otherwise
	tty bool      // w ends on a terminal
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.via != nil {
		if n, err := s.via.Write(p); err == nil {
			return n, nil
		}
	}
	return s.w.Write(p)
}

// route sends the log through bars (nil: back to its own output). It does so only when
// the log itself goes to a terminal: a log redirected to a file never meets the bars.
func (s *logSink) route(bars io.Writer) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if bars != nil && !s.tty {
		return
	}
	s.via = bars
}
