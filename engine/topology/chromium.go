package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/internal/chromeh3"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// chromiumClient is headless Chromium as an HTTP/3 run's client (client.exec: {adapter:
// chromium}): kalab drives it over its DevTools pipe, one fetch() per request of the plan,
// pausing as the plan says. Its connections are the server's count: Chromium's own
// connection ids name them only within the run.
type chromiumClient struct {
	x     *Exec
	st    scenario.Settings
	scale shape.Scale
	topo  *topology
	front string
	conns int64 // the connections Chromium's own ids name, the page load's included
}

func (c *chromiumClient) Role() string { return "client" }

func (c *chromiumClient) Start(_ context.Context, next string) (string, error) {
	c.front = next
	return "", nil
}

func (c *chromiumClient) Identity() Identity {
	return Identity{Kind: "exec", Name: c.x.ID.Adapter, Program: c.x.ID.Executable, Version: c.x.ID.Version}
}

func (c *chromiumClient) Timing() map[string]*lag.Recorder { return nil }
func (c *chromiumClient) Close() error                     { return nil }

// Stats are Chromium's own count of its connections; the run's connections metric is the
// server's count (an untrusted client's), which flatten writes over it.
func (c *chromiumClient) Stats() Stats { return clientStats{Connections: c.conns} }

// drive loads a page of the server (which opens Chromium's first connection, as a browser's
// first request would) and sends the plan's requests from it.
func (c *chromiumClient) drive(ctx context.Context, rc *recorder) error {
	srv, ok := c.topo.server.(*h3Server)
	if !ok {
		return errors.New("chromium: the server is not kalab's HTTP/3 server")
	}
	spki, err := chromeh3.SPKI(srv.cert)
	if err != nil {
		return err
	}
	opt := chromeh3.Options{Origin: "https://" + c.front, CertSPKI: spki, Steps: chromiumSteps(c.st, c.scale)}
	results, err := chromeh3.Run(ctx, c.x.ID.Executable, opt)
	carried := map[uint64]bool{} // connections that carried a request of the plan
	seen := map[int]bool{}
	for _, r := range results {
		if r.Status > 0 && !seen[r.ConnectionID] {
			seen[r.ConnectionID] = true
			c.conns++
		}
		if r.Seq == 0 {
			continue // the page load: not a request of the plan
		}
		ev := r.Event()
		// Reused by kalab's count, as its own clients report it: the connection carried an
		// earlier request of the plan (Chromium's own flag also counts the page load).
		ev.Reused = ev.ConnID != 0 && carried[ev.ConnID]
		carried[ev.ConnID] = true
		rc.record(ev, time.Time{})
	}
	if err != nil {
		return fmt.Errorf("chromium: %w", err)
	}
	return nil
}

// chromiumSteps are the plan's requests: the pause before each burst's first one.
func chromiumSteps(st scenario.Settings, scale shape.Scale) []chromeh3.Step {
	spec := configure.Load(st, scale)
	pauses, burst := load.Pauses(spec), spec.BurstSize()
	steps := make([]chromeh3.Step, st.Load.Requests)
	for i := range steps {
		steps[i].Method, steps[i].Path = st.Client.Method, st.Client.Path
		if b := i / burst; i%burst == 0 && b > 0 && b-1 < len(pauses) {
			steps[i].Pause = pauses[b-1]
		}
	}
	return steps
}
