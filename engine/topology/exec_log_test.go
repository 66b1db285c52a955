package topology

import (
	"net/http"
	"testing"
)

// The server's count by index: an index seen twice is one hidden re-send; without index
// headers, what the server got beyond the answered requests.
func TestServerLogHiddenResends(t *testing.T) {
	t.Parallel()
	req := func(idx string) *http.Request {
		r, _ := http.NewRequest("GET", "http://127.0.0.1/", nil)
		if idx != "" {
			r.Header.Set("Kalab-Request", idx)
		}
		return r
	}
	l := newServerLog()
	for i, idx := range []string{"0", "1", "1", "2", "2", "2"} {
		l.observe(req(idx), 1, int64(i+1))
	}
	if got := l.hiddenResends(3); got != 3 {
		t.Errorf("tagged: %d hidden re-sends, want 3 (index 1 once more, index 2 twice more)", got)
	}
	if l.reused != 5 {
		t.Errorf("reused %d, want 5 (every request but the first on the connection)", l.reused)
	}
	u := newServerLog()
	for i := 0; i < 5; i++ {
		u.observe(req(""), int64(i+1), 1)
	}
	if got := u.hiddenResends(4); got != 1 {
		t.Errorf("untagged: %d, want 1 (5 received, 4 answered)", got)
	}
	if got := u.hiddenResends(7); got != 0 {
		t.Errorf("untagged with more answers than requests: %d, want 0", got)
	}
}
