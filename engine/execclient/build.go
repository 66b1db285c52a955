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

// buildTimeout bounds compiling an adapter: a cold Go build cache compiles net/http and
// crypto/tls first, which takes tens of seconds on a loaded 2-core machine.
const buildTimeout = 5 * time.Minute

// buildMu serialises builds within kalab, so that parallel runs of one adapter build it
// once and then find it.
var buildMu sync.Mutex

// built returns the program compiled from a's script by the runtime that reported version,
// building it first when no earlier build of the same script by the same runtime is in
// the cache (os.UserCacheDir()/kalab/adapters). The build runs before the run begins, so
// neither the run's clock nor its deadline counts it.
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
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	script := filepath.Join(tmp, a.Script)
	if err := os.WriteFile(script, src, 0o644); err != nil {
		return "", err
	}
	bctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	prog := filepath.Join(tmp, a.Name)
	args := append(append(append([]string(nil), a.Build...), prog), script)
	cmd := exec.CommandContext(bctx, runtimePath, args...)
	cmd.Dir = tmp
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		if bctx.Err() != nil {
			return "", fmt.Errorf("building the %s adapter (%s %s) took over %v", a.Name, a.Runtime, strings.Join(args, " "), buildTimeout)
		}
		return "", fmt.Errorf("building the %s adapter (%s %s): %v: %s", a.Name, a.Runtime, strings.Join(args, " "), err, strings.TrimSpace(string(b)))
	}
	// A rename is atomic: another kalab building the same program at once leaves one
	// whole file either way.
	if err := os.Rename(prog, out); err != nil {
		return "", err
	}
	return out, nil
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
