package stage

import (
	"testing"
	"time"
)

// TestListenQueue pins the accept queue: a server busy for Delay per accept takes
// connections one Delay apart, and a connection that finds Backlog+1 still waiting
// finds the queue full, until the server has taken enough of them.
func TestListenQueue(t *testing.T) {
	const delay = 100 * time.Millisecond
	q := ListenQueue{Backlog: 2, Delay: delay}
	for i, want := range []time.Duration{0, delay, 2 * delay, 3 * delay} {
		if q.Full(t0) {
			t.Fatalf("connection %d found the queue full with %d waiting", i, i-1)
		}
		if got := q.Enter(t0); !got.Equal(at(want)) {
			t.Errorf("connection %d accepted at +%v, want +%v", i, got.Sub(t0), want)
		}
	}
	// Waiting: the ones accepted at 100, 200 and 300 ms, Backlog+1 of them.
	if !q.Full(t0) || !q.Full(at(delay-1)) {
		t.Error("three waiting did not fill a backlog of 2")
	}
	if q.Full(at(delay)) {
		t.Error("the queue is still full once the server took the second connection")
	}
	// The server is busy until 400 ms; a connection at 1 s is taken at once.
	if got := q.Enter(at(time.Second)); !got.Equal(at(time.Second)) {
		t.Errorf("a connection to an idle server accepted at +%v, want +1s", got.Sub(t0))
	}
	unlimited := ListenQueue{Delay: delay}
	for range 10 {
		unlimited.Enter(t0)
	}
	if unlimited.Full(t0) {
		t.Error("a queue without a backlog filled up")
	}
}
