package topology

import (
	"testing"
	"time"
)

// A replayed client's pool goes a second after its own idle timeout would have closed its
// connections; without one it is kept to the end.
func TestReplayDropAfter(t *testing.T) {
	if got := dropAfter(4 * time.Second); got != 5*time.Second {
		t.Errorf("idle 4s: dropped after %v, want 5s", got)
	}
	if got := dropAfter(0); got != 0 {
		t.Errorf("no idle timeout: dropped after %v, want never (0)", got)
	}
}
