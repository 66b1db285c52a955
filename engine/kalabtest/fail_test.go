package kalabtest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/kalabtest"
)

// failEnv makes TestFailing run one of its failing cases: the test binary runs itself as a
// go test whose verdict the parent test reads.
const failEnv = "KALABTEST_FAILING"

// failing are tests that must fail, one per path a failed verdict takes to t.
var failing = map[string]func(t *testing.T){
	// A check that does not hold, on the virtual clock (each run its own subtest).
	"check": func(t *testing.T) {
		kalabtest.Run(t, staleScenario("errors == 0"), kalabtest.Client(&http.Client{}))
	},
	// The same, with runs in parallel.
	"parallel": func(t *testing.T) {
		kalabtest.Run(t, staleScenario("errors == 0"), kalabtest.Client(&http.Client{}), kalabtest.Parallel(2))
	},
	// A compare check across runs that does not hold (every run's own checks pass).
	"compare": func(t *testing.T) {
		sc := staleScenario()
		sc.Compare = []string{"variant('post').errors < variant('get').errors"}
		kalabtest.Run(t, sc, kalabtest.Client(&http.Client{}))
	},
	// A check that does not hold, from YAML bytes.
	"yaml": func(t *testing.T) {
		src := "name: y\nnetwork: {rtt: 100ms}\nserver: {idle_timeout: 500ms, keepalive_hint: false}\n" +
			"client: {method: POST}\nload: {requests: 4, burst: 1, pause: 450ms}\nexpect: [\"errors == 0\"]\n"
		kalabtest.Run(t, kalabtest.YAML("y.yaml", []byte(src)), kalabtest.Client(&http.Client{}))
	},
	// An engine error: the RoundTripper fails before any request can be made.
	"error": func(t *testing.T) {
		kalabtest.Run(t, staleScenario(), kalabtest.Transport(func(*tls.Config, kalabtest.DialFunc) http.RoundTripper { return nil }))
	},
	// A check that does not hold on the real clock.
	"real": func(t *testing.T) {
		sc := staleScenario("errors == 1")
		sc.Load = kalabtest.Load{Requests: 2}
		sc.Variants = nil
		kalabtest.Run(t, sc, kalabtest.Client(&http.Client{}), kalabtest.RealClock())
	},
	// A client with a dialer of its own.
	"dialer": ownDialer,
	// A client with a dialer of its own that is refused at once: its requests fail without
	// any wait, and the subtest says the dial it was handed was never used.
	"refused": func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		rt := func(tc *tls.Config, _ kalabtest.DialFunc) http.RoundTripper {
			return &http.Transport{TLSClientConfig: tc, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			}}
		}
		kalabtest.Run(t, staleScenario(), kalabtest.Transport(rt), kalabtest.Filter("/get$"))
	},
	// A RoundTripper that waits on a goroutine started outside the run.
	"goroutine": func(t *testing.T) {
		release := make(chan struct{}) // made outside the run's bubble
		defer close(release)
		rt := func(tc *tls.Config, dial kalabtest.DialFunc) http.RoundTripper {
			return &gate{release: release, next: &http.Transport{TLSClientConfig: tc, DialContext: dial}}
		}
		start := time.Now()
		kalabtest.Run(t, staleScenario(), kalabtest.Transport(rt), kalabtest.Filter("/get$"))
		t.Logf("failed after %v", time.Since(start).Round(10*time.Millisecond))
	},
	// A scenario that does not load.
	"invalid": func(t *testing.T) {
		sc := staleScenario()
		sc.Set = map[string]any{"server.idle_timout": time.Second}
		kalabtest.Run(t, sc)
	},
}

// TestFailing: each failing case fails go test (exit status 1) with its reason. Run by
// itself (KALABTEST_FAILING set) it is the failing test.
func TestFailing(t *testing.T) {
	if name := os.Getenv(failEnv); name != "" {
		failing[name](t)
		return
	}
	want := map[string][]string{
		"check":     {"--- FAIL: TestFailing/post", "kalabtest.Scenario(go-client-stale): go-client-stale/post: errors == 0 (errors=5)"},
		"parallel":  {"--- FAIL: TestFailing/post", "errors == 0 (errors=5)"},
		"compare":   {"kalabtest.Scenario(go-client-stale): go-client-stale (compare): variant('post').errors < variant('get').errors"},
		"yaml":      {"y.yaml:6:10: y/default: errors == 0 (errors=2)"},
		"error":     {"go-client-stale/get: error: client: client config: go-func needs a RoundTripper"},
		"real":      {"errors == 1 (errors=0)"},
		"refused":   {"your RoundTripper never dialed through the dial kalabtest.Transport hands it"},
		"invalid":   {"kalabtest.Scenario(go-client-stale): server.idle_timout: "},
		"dialer":    {"kalabtest.Transport's RoundTripper waits on something outside the run", "[IO wait]"},
		"goroutine": {"kalabtest.Transport's RoundTripper waits on something outside the run", "[chan receive]: github.com/kalab-dev/kalab/engine/kalabtest_test.(*gate).RoundTrip"},
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name := range failing {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(exe, "-test.run=^TestFailing$", "-test.v")
			cmd.Env = append(os.Environ(), failEnv+"="+name)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("go test of a failing case: %v, want exit status 1\n%s", err, out.String())
			}
			for _, w := range want[name] {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if m := regexp.MustCompile(`failed after (\S+)`).FindStringSubmatch(out.String()); name == "dialer" || name == "goroutine" {
				if d, err := time.ParseDuration(m[len(m)-1]); m == nil || err != nil || d >= time.Second {
					t.Errorf("the run that waits outside did not fail within 1 s:\n%s", out.String())
				}
			}
		})
	}
}

// ownDialer runs a RoundTripper with a dialer of its own, to a real socket that never
// answers: the run must end within a second, naming the goroutine that waits outside the
// in-memory network.
func ownDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // read nothing, answer nothing
		}
	}()
	defer func() {
		ln.Close()
		<-accepted
		for _, c := range conns {
			c.Close() // let the stuck run end
		}
		time.Sleep(100 * time.Millisecond)
	}()
	own := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	}
	rt := func(tc *tls.Config, _ kalabtest.DialFunc) http.RoundTripper {
		return &http.Transport{TLSClientConfig: tc, DialContext: own}
	}
	start := time.Now()
	kalabtest.Run(t, staleScenario(), kalabtest.Transport(rt), kalabtest.Filter("/get$"))
	t.Logf("failed after %v", time.Since(start).Round(10*time.Millisecond))
}

// gate waits for release before each request.
type gate struct {
	release chan struct{}
	next    http.RoundTripper
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	<-g.release
	return g.next.RoundTrip(r)
}
