package execclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/childenv"
)

// buildTimeout bounds compiling an adapter. A cold Go build cache compiles net/http and
// crypto/tls first (and GOTOOLCHAIN's release its own standard library), which takes
// minutes on a 2-core machine with other work on it. kalab run builds every adapter its
// runs need before the first run starts (Identify, from the runner), so the build is never
// timed with a run and this limit is no verdict on the machine's timing: it only ends a
// build that hangs.
var buildTimeout = 30 * time.Minute

// buildMu serialises builds within kalab, so that parallel runs of one adapter build it
// once and then find it.
var buildMu sync.Mutex

// buildFailed remembers, by the program's path in the cache, each build that failed in
// this process, so that the runs that need it fail at once with its error rather than
// build again (up to buildTimeout each).
var buildFailed = map[string]error{}

// built returns the program compiled from a's script by the runtime that reported version,
// building it first when no earlier build of the same script by the same runtime is in
// the cache (os.UserCacheDir()/kalab/adapters). kalab run asks for every adapter its runs
// need before the first run starts (engine/runner's prebuild), so a run's own call finds
// the program, and neither a run's clock nor its deadline counts a build.
func (a *Adapter) built(ctx context.Context, runtimePath, version string, env []string) (string, error) {
	src, err := a.script()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s/%s\x00", a.Name, runtimePath, version, runtime.GOOS, runtime.GOARCH)
	h.Write(src)
	dir, err := adapterCache()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, a.Name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	buildMu.Lock()
	defer buildMu.Unlock()
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
		return out, nil
	}
	if err := buildFailed[out]; err != nil {
		return "", err
	}
	if err := a.build(ctx, runtimePath, src, dir, out, env); err != nil {
		if ctx.Err() == nil { // an interrupted build says nothing of the next one
			buildFailed[out] = err
		}
		return "", err
	}
	return out, nil
}

// build compiles src into out, in a directory of its own under dir.
func (a *Adapter) build(ctx context.Context, runtimePath string, src []byte, dir, out string, env []string) error {
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a temporary directory: nothing more to do if removing it fails
	script := filepath.Join(tmp, a.Script)
	if err := os.WriteFile(script, src, 0o644); err != nil {
		return err
	}
	bctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	prog := filepath.Join(tmp, a.Name)
	args := append(append(append([]string(nil), a.Build...), prog), script)
	cmd := exec.CommandContext(bctx, runtimePath, args...)
	cmd.Dir = tmp
	cmd.Env = env
	what := fmt.Sprintf("building the %s adapter (%s%s %s)", a.Name, toolchain(env), a.Runtime, strings.Join(args, " "))
	if b, err := cmd.CombinedOutput(); err != nil {
		if bctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("%s did not finish within %v: it runs once, before any run starts, and its program is kept in %s once built", what, buildTimeout, dir)
		}
		return fmt.Errorf("%s: %v: %s", what, err, strings.TrimSpace(string(b)))
	}
	// A rename is atomic: another kalab building the same program at once leaves one
	// whole file either way.
	return os.Rename(prog, out)
}

// toolchain is "GOTOOLCHAIN=go1.22.12 " when env names the Go release to build with.
func toolchain(env []string) string {
	for _, e := range env {
		if strings.HasPrefix(e, "GOTOOLCHAIN=") {
			return e + " "
		}
	}
	return ""
}

// adapterCache is where built adapters are kept between runs: the user's cache directory
// (private to the user). Without one, a directory private to this kalab process, never a
// predictable path in the shared temporary directory, where another user could leave a
// program for kalab to start.
func adapterCache() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		privateCache.once.Do(func() { privateCache.dir, privateCache.err = os.MkdirTemp("", "kalab-adapters-") })
		return privateCache.dir, privateCache.err
	}
	dir := filepath.Join(base, "kalab", "adapters")
	return dir, os.MkdirAll(dir, 0o700)
}

var privateCache struct {
	once sync.Once
	dir  string
	err  error
}

// childEnv is the environment of a's runtime and program: the scenario's env: entries
// after what the runtime inherits from kalab (Inherit), then the protocol's.
func (a *Adapter) childEnv(scenarioEnv, protocol []string) []string {
	return childenv.For(append(append([]string(nil), a.Inherit...), scenarioEnv...), protocol)
}
