package admit

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

// loadSettings loads one scenario and returns its single run's settings.
func loadSettings(t testing.TB, src string) scenario.Settings {
	t.Helper()
	p := plantest.Load(t, src)
	return p.Scenarios[0].Runs[0].Settings
}

// The counts follow from the topology: 2 descriptors a connection with no link, 4 with the
// link's proxy, and the balancer's hops on top; HTTP/2 is counted by connections.
func TestRunHoldCountsWhatTheRunHolds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src   string
		conns, fds  int
		detailParts []string
	}{
		{"direct h1", "name: a\nload: {requests: 500, concurrency: 500}\n", 501, 501 * 2, []string{"client, server"}},
		{"proxied h1", "name: a\nnetwork: {rtt: 2ms}\nload: {requests: 10000, concurrency: 10000}\n", 10001, 10001 * 4, []string{"10001 connections × 4 (client, link proxy ×2, server)"}},
		{"sequential", "name: a\nnetwork: {rtt: 2ms}\nload: {requests: 10000, concurrency: 1}\n", 2, 8, nil},
		{"max_conns", "name: a\nnetwork: {rtt: 2ms}\nclient: {max_conns: 10}\nload: {requests: 100, concurrency: 100}\n", 11, 44, nil},
		// 10,000 streams over h2c: ceil(10000/100)+1 connections, not 10,001.
		{"h2 burst", "name: a\nnetwork: {rtt: 2ms}\nserver: {http: \"2\"}\nload: {requests: 10000, concurrency: 10000}\n", 101, 101 * 4, nil},
		{"h2 streams", "name: a\nserver: {http: \"2\", http2_max_streams: 1000}\nload: {requests: 10000, concurrency: 10000}\n", 11, 22, nil},
		{"h2 go-net-http", "name: a\nserver: {http: \"2\"}\nclient: {implementation: go-net-http}\nload: {requests: 100, concurrency: 100}\n", 101, 202, nil},
		// The client never asks for h2: it is HTTP/1.1 whatever the server offers.
		{"h2 refused", "name: a\nserver: {http: \"2\"}\nclient: {http2: never}\nload: {requests: 100, concurrency: 100}\n", 101, 202, nil},
		{"balancer, both links", "name: a\nnetwork: {rtt: 2ms}\nbalancer: {backend_network: {rtt: 1ms}}\nload: {requests: 100, concurrency: 100}\n",
			101, 101*4 + 101*4, []string{"101 backend connections × 4"}},
		{"balancer, no backend link", "name: a\nnetwork: {rtt: 2ms}\nbalancer: {}\nload: {requests: 100, concurrency: 100}\n",
			101, 101*4 + 101*2, nil},
	} {
		st := loadSettings(t, c.src)
		h := HoldOf(st)
		if h.Conns != c.conns || h.FDs != c.fds {
			t.Errorf("%s: %d connections, %d descriptors (%s); want %d, %d", c.name, h.Conns, h.FDs, h.Per, c.conns, c.fds)
		}
		for _, p := range c.detailParts {
			if !strings.Contains(h.Per, p) {
				t.Errorf("%s: detail %q lacks %q", c.name, h.Per, p)
			}
		}
	}
}
