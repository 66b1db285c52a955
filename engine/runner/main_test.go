package runner

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// parallelTests is how many of the package's parallel tests run at once unless
// -test.parallel says otherwise. go test's default is GOMAXPROCS, 2 on a 2-core machine,
// but these tests mostly wait: on scenario pauses in real time, on Node, curl, nginx and
// quic-go's own timers. At 2 the package took 186 s on the project's 2-vCPU VM, at 4 154 s
// (2026-12-07, nothing else running), each test judging its own timing as before. Under the
// race detector the tests compute rather than wait (its real-time tests skip), and four at
// once starved the virtual clock's own watchdog in CI's idle class: there the default
// stands.
const parallelTests = 4

func TestMain(m *testing.M) {
	flag.Parse()
	set := testci.Race()
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(max(parallelTests, runtime.GOMAXPROCS(0)))); err != nil {
			panic(err) // the testing package always defines the flag
		}
	}
	os.Exit(m.Run())
}
