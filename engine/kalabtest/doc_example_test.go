package kalabtest_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/kalabtest"
)

// A scenario built in Go is the YAML a file would hold: the typed fields, and any other
// field by its dotted path.
func ExampleScenario() {
	sc := kalabtest.Scenario{
		Name:   "idle-race",
		RTT:    100 * time.Millisecond,
		Server: kalabtest.Server{TLS: true, IdleTimeout: 500 * time.Millisecond},
		Load:   kalabtest.Load{Requests: 10, Burst: 1, Pause: 450 * time.Millisecond},
		Set:    map[string]any{"client.timeout": 2 * time.Second},
		Expect: []string{"errors == 0"},
		Variants: []kalabtest.Variant{
			{Name: "get"},
			{Name: "post", Method: "POST", Expect: []string{"hidden_retries == 0"}},
		},
	}
	out, err := sc.YAML()
	if err != nil {
		panic(err)
	}
	fmt.Print(string(out))
	// Output:
	// client:
	//     timeout: 2s
	// expect:
	//     - errors == 0
	// load:
	//     burst: 1
	//     pause: 450ms
	//     requests: 10
	// name: idle-race
	// network:
	//     rtt: 100ms
	// server:
	//     idle_timeout: 500ms
	//     keepalive_hint: false
	//     tls: true
	// variants:
	//     - name: get
	//     - client:
	//         method: POST
	//       expect:
	//         - hidden_retries == 0
	//       name: post
}

// Run a file's scenario with your service's own client, and assert on the records.
func ExampleRun() {
	_ = func(t *testing.T) { // the body of a func TestStaleRace(t *testing.T)
		myClient := &http.Client{Transport: &http.Transport{IdleConnTimeout: 90 * time.Second}}
		runs := kalabtest.Run(t, kalabtest.File("testdata/stale.yaml"), kalabtest.Client(myClient))
		if post := runs.Variant("post"); post.Metrics.Errors != 5 {
			t.Errorf("POST errors: %v", post.Metrics.Errors)
		}
	}
}

// A table-driven test: one scenario built in Go per server idle timeout, no files.
func ExampleScenario_table() {
	_ = func(t *testing.T) {
		for _, idle := range []time.Duration{300 * time.Millisecond, 500 * time.Millisecond, time.Second} {
			t.Run(idle.String(), func(t *testing.T) {
				kalabtest.Run(t, kalabtest.Scenario{
					Name:   "idle",
					RTT:    100 * time.Millisecond,
					Server: kalabtest.Server{TLS: true, IdleTimeout: idle},
					Method: "POST",
					Load:   kalabtest.Load{Requests: 10, Burst: 1, Pause: 450 * time.Millisecond},
					Expect: []string{"errors == 0"},
				}, kalabtest.Client(&http.Client{}))
			})
		}
	}
}

// Any RoundTripper, built around the dial and TLS config of the run: here a wrapper around
// Go's Transport.
func ExampleTransport() {
	_ = func(t *testing.T) {
		build := func(tc *tls.Config, dial kalabtest.DialFunc) http.RoundTripper {
			base := &http.Transport{TLSClientConfig: tc, DialContext: dial, IdleConnTimeout: 90 * time.Second}
			return myRetryWrapper(base)
		}
		kalabtest.Run(t, kalabtest.File("testdata/stale.yaml"), kalabtest.Transport(build))
	}
}

func myRetryWrapper(rt http.RoundTripper) http.RoundTripper { return rt }
