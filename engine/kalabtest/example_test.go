package kalabtest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/kalabtest"
)

// A Go test runs a scenario with its own client: here a Transport like the one a service
// would configure, against a server that closes idle connections sooner than the client
// expects. The file's checks say what must hold; Run makes each run a subtest and
// returns the records for anything more.
func TestExampleStaleRace(t *testing.T) {
	myClient := &http.Client{
		Transport: &http.Transport{IdleConnTimeout: 90 * time.Second},
	}
	runs := kalabtest.Run(t, kalabtest.File("testdata/stale.yaml"), kalabtest.Client(myClient))
	for _, r := range runs {
		t.Logf("%s: %.0f errors, %.0f hidden re-sends, %.0f connections, p50 %.1f ms, wall %.0f ms",
			r.Variant, r.Metrics.Errors, r.Metrics.HiddenRetries, r.Metrics.Connections, r.Metrics.LatencyMs.P50, r.WallMs)
	}
}
