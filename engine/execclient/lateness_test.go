package execclient

import (
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// The program's own planned start wins; without one, the first request of a burst after a
// pause is judged against the burst before's last end plus the pause; other requests are
// not judged.
func TestLateness(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_000_000)
	ms := func(d float64) time.Duration { return time.Duration(d * float64(time.Millisecond)) }
	l := newLateness(Plan{Requests: 4, Burst: 2, PausesMs: []float64{100}})
	ev := func(seq int, start, lat float64) client.Event {
		return client.Event{Seq: seq, Start: t0.Add(ms(start)), Latency: ms(lat)}
	}
	l.add([]byte(`{"index":0}`), ev(0, 0, 10))
	l.add([]byte(`{"index":1}`), ev(1, 5, 20)) // ends at 25, the burst's last end
	l.add([]byte(`{"index":2}`), ev(2, 155, 10))
	l.add([]byte(`{"index":3,"planned":1000150}`), ev(3, 160, 10)) // says it was due at 150
	late, derived := l.result()
	want := []time.Duration{ms(30), ms(10)} // 155 - (25 + 100), 160 - 150
	if derived != 1 || len(late) != 2 || late[0] != want[0] || late[1] != want[1] {
		t.Fatalf("late %v (derived %d), want %v (derived 1)", late, derived, want)
	}
}
