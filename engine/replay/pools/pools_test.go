package pools

import (
	"context"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// countingClient stands for a model client (not under test here): it counts its closes.
type countingClient struct{ closed *int }

func (c countingClient) Do(context.Context, int) client.Event { return client.Event{} }
func (c countingClient) Stats() client.Stats                  { return client.Stats{Connections: 1} }
func (c countingClient) Close() error                         { *c.closed++; return nil }

// A client's pool that has sat idle past the client's idle timeout (plus a second) is
// closed, so per-client state stays bounded; one with a request in flight never is, and
// a client that comes back gets a new pool. Without a client idle timeout none is dropped.
func TestReplayPoolsDropIdleClients(t *testing.T) {
	t.Parallel()
	closed := 0
	build := func(client.Config) (client.Client, error) { return countingClient{&closed}, nil }
	ps := New(build, client.Config{}, 5*time.Second) // a client idle timeout of 4 s, plus a second
	t0 := time.Now()
	step := func(key string, at time.Duration, finish bool) *Pool {
		t.Helper()
		p, err := ps.Get(key, t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		if finish {
			ps.Done(p, t0.Add(at))
		}
		return p
	}
	step("a", 0, true)
	busy := step("b", 0, false) // in flight for the whole test
	step("c", 3*time.Second, true)
	step("c", 6*time.Second, true) // a: idle 6 s > 5 s, dropped; c: 3 s, kept
	if closed != 1 || ps.Dropped != 1 || len(ps.byKey) != 2 || ps.byKey["b"] != busy {
		t.Errorf("at 6 s: %d closed, %d dropped, %d pools; want a dropped, b (busy) and c kept", closed, ps.Dropped, len(ps.byKey))
	}
	step("a", 12*time.Second, true) // c idle 6 s: dropped; a comes back to a new pool
	if closed != 2 || ps.Opened != 4 || len(ps.Seen) != 3 || ps.Peak != 3 {
		t.Errorf("at 12 s: %d closed, %d opened, %d clients, peak %d; want 2, 4, 3, 3", closed, ps.Opened, len(ps.Seen), ps.Peak)
	}
	if err := ps.CloseAll(); err != nil || closed != 4 || ps.Total.Connections != 4 {
		t.Errorf("closeAll: %v, %d closed, %d connections; want every pool closed and counted", err, closed, ps.Total.Connections)
	}
}
