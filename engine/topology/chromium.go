package topology

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
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
func (c *chromiumClient) Stats() Stats                     { return clientStats{} }

// drive loads a page of the server (which opens Chromium's first connection, as a browser's
// first request would) and sends the plan's requests from it.
func (c *chromiumClient) drive(ctx context.Context, rc *recorder) error {
	srv, ok := c.topo.server.(*h3Server)
	if !ok {
		return errors.New("chromium: the server is not kalab's HTTP/3 server")
	}
	spki, err := srv.spki()
	if err != nil {
		return err
	}
	opt := chromeh3.Options{Origin: "https://" + c.front, CertSPKI: spki, Steps: chromiumSteps(c.st, c.scale)}
	results, err := chromeh3.Run(ctx, c.x.ID.Executable, opt)
	carried := map[uint64]bool{} // connections that carried a request of the plan
	for _, r := range results {
		if r.Seq == 0 {
			continue // the page load: not a request of the plan
		}
		ev := chromiumEvent(r)
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
	pauses := load.Pauses(configure.Load(st, scale))
	burst := st.Load.Burst
	if burst <= 0 {
		burst = st.Load.Requests
	}
	steps := make([]chromeh3.Step, st.Load.Requests)
	for i := range steps {
		steps[i].Method, steps[i].Path = st.Client.Method, st.Client.Path
		if b := i / burst; i%burst == 0 && b > 0 && b-1 < len(pauses) {
			steps[i].Pause = pauses[b-1]
		}
	}
	return steps
}

// chromiumEvent is one of Chromium's requests as kalab's clients report theirs. Chromium's
// connection ids start at 0; kalab's 0 means none.
func chromiumEvent(r chromeh3.Result) client.Event {
	ev := client.Event{Seq: r.Seq - 1, Start: r.Start, Latency: r.Latency, Status: r.Status, Attempts: 1, Error: r.Err}
	if r.Status > 0 {
		ev.ConnID = uint64(r.ConnectionID) + 1
	}
	if r.Err != "" && r.Status == 0 {
		ev.Class = chromiumClass(r.Err)
	}
	return ev
}

// chromiumClass reads Chromium's net error names (net/base/net_error_list.h).
func chromiumClass(err string) client.ErrorClass {
	switch {
	case strings.Contains(err, "TIMED_OUT"):
		return client.ClassTimeout
	case strings.Contains(err, "CONNECTION_RESET"), strings.Contains(err, "QUIC_PROTOCOL_ERROR"):
		return client.ClassReset
	case strings.Contains(err, "CONNECTION_REFUSED"):
		return client.ClassRefused
	case strings.Contains(err, "CERT"), strings.Contains(err, "SSL"):
		return client.ClassTLS
	}
	return client.ClassOther
}

// spki is the base64 SHA-256 of the server certificate's public key, which Chromium is told
// to trust (--ignore-certificate-errors-spki-list: QUIC takes no other exception).
func (e *h3Server) spki() (string, error) {
	if len(e.cert.Certificate) == 0 {
		return "", errors.New("chromium: the server has no certificate")
	}
	leaf, err := x509.ParseCertificate(e.cert.Certificate[0])
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}
