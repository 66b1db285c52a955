package configure

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestUnrepeatable: a virtual run over HTTP/1.1 has no note; HTTP/3 names its byte counts
// and its connections' close times;
// HTTP/2 names its byte counts and, with requests in flight together, the requests file;
// client.http2 never, or tls without TLS, is HTTP/1.1; a real-clock run has none.
func TestUnrepeatable(t *testing.T) {
	h2 := scenario.Settings{Server: scenario.Server{HTTP: "2", TLS: true}, Client: scenario.Client{HTTP2: "tls"}}
	burst := h2
	burst.Load.Concurrency = 10
	never := burst
	never.Client.HTTP2 = "never"
	plain := burst
	plain.Server.TLS = false
	cases := []struct {
		name    string
		st      scenario.Settings
		virtual bool
		want    string // the notes' first words, joined
	}{
		{"http/1.1", scenario.Settings{}, true, ""},
		{"http/3", scenario.Settings{Server: scenario.Server{HTTP: "3"}}, true, "bytes closes"},
		{"http/2 one at a time", h2, true, "bytes"},
		{"http/2 burst", burst, true, "bytes waiters"},
		{"http2 never", never, true, ""},
		{"http2 tls without tls", plain, true, ""},
		{"real clock", burst, false, ""},
	}
	for _, c := range cases {
		var got []string
		for _, n := range Unrepeatable(c.st, c.virtual) {
			switch {
			case strings.Contains(n, "bytes_up and bytes_down may differ"):
				got = append(got, "bytes")
			case strings.Contains(n, "requests file's per-request fields may differ"):
				got = append(got, "waiters")
			case strings.Contains(n, "connections file's close times may differ"):
				got = append(got, "closes")
			default:
				got = append(got, "?")
			}
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: notes %q, want %q", c.name, g, c.want)
		}
	}
}
