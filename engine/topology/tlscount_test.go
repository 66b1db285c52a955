package topology

import (
	"testing"

	"github.com/kalab-dev/kalab/engine/h3"
)

// TestTLSCountsSide: who counts a run's TLS handshakes, in flatten's order (the server's
// stats first, the client's last). kalab's own TCP server counts them; a real server cannot,
// and then kalab's own client's count stands; nothing counts a real client's against a real
// server (the loader refuses a check on them); over HTTP/3 kalab's client counts its own and
// Chromium's are the server's.
func TestTLSCountsSide(t *testing.T) {
	t.Parallel()
	model := clientStats{trusted: true, handshakes: 4, resumed: 3}
	program := clientStats{}
	quic := clientStats{trusted: true, handshakes: 3, resumed: 2, quic: &h3.ClientQUICStats{}}
	for _, c := range []struct {
		name           string
		server, client Stats
		want           map[string]float64 // nil: neither key written
	}{
		{"embedded server, model client", serverStats{TLSHandshakes: 4, TLSResumed: 2, own: true}, model, map[string]float64{"tls_handshakes": 4, "tls_resumed": 2}},
		{"embedded server, program", serverStats{TLSHandshakes: 4, TLSResumed: 1, own: true}, program, map[string]float64{"tls_handshakes": 4, "tls_resumed": 1}},
		{"real server, model client", serverStats{}, model, map[string]float64{"tls_handshakes": 4, "tls_resumed": 3}},
		{"real server, program", serverStats{}, program, nil},
		{"HTTP/3, kalab's client", h3ServerStats{TLSHandshakes: 3, TLSResumed: 1}, quic, map[string]float64{"tls_handshakes": 3, "tls_resumed": 2}},
		{"HTTP/3, Chromium", h3ServerStats{TLSHandshakes: 3, TLSResumed: 2}, program, map[string]float64{"tls_handshakes": 3, "tls_resumed": 2}},
	} {
		flat := map[string]float64{}
		c.server.Flatten(flat)
		c.client.Flatten(flat)
		for _, k := range []string{"tls_handshakes", "tls_resumed"} {
			got, ok := flat[k]
			if want, wantOK := c.want[k]; ok != wantOK || got != want {
				t.Errorf("%s: %s = %v (written %v), want %v (written %v)", c.name, k, got, ok, want, wantOK)
			}
		}
	}
}
