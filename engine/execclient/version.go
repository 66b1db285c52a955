package execclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvUndiciPath lists the directories (separated as PATH is) where the node-fetch adapter
// looks for the undici release client.exec's version names: each an npm prefix holding
// node_modules/undici (npm install --prefix DIR undici@7), or an undici package itself;
// unset, the prefixes /opt/kalab/undici* (undiciDirs).
const EnvUndiciPath = "KALAB_UNDICI_PATH"

// versionEnv is what the runtime's probe and build need to run cfg.Version: the Go
// toolchain the go command switches to (GOTOOLCHAIN).
func versionEnv(cfg Config) []string {
	if cfg.Version != "" && cfg.Adapter.Runtime == "go" {
		return []string{"GOTOOLCHAIN=" + cfg.Version}
	}
	return nil
}

// versionHint says how to make cfg.Version available, for a probe that failed.
func versionHint(cfg Config) string {
	if cfg.Version != "" && cfg.Adapter.Runtime == "go" {
		return "the go command takes " + cfg.Version + " from the Go module proxy: run GOTOOLCHAIN=" + cfg.Version +
			" go version once where the proxy can be reached, or set GOPROXY to one that can"
	}
	return InstallHint(cfg.Adapter.Name)
}

// probeError is the line of a failed probe's output that says why: the first, or with a
// toolchain to fetch the last (the go command says what it is downloading first).
func probeError(cfg Config, out string) string {
	if cfg.Version != "" && cfg.Adapter.Runtime == "go" {
		out = strings.TrimSpace(out)
		return out[strings.LastIndexByte(out, '\n')+1:]
	}
	return firstLine(out)
}

// useVersion checks that the runtime id names runs cfg.Version, and finds what else the
// adapter needs for it (the undici package), noting it in id.
func useVersion(cfg Config, id *Identity) error {
	a := cfg.Adapter
	switch {
	case cfg.Version == "":
		return nil
	case a.Runtime == "go":
		// go version go1.22.12 linux/amd64. A go command older than 1.21 ignores
		// GOTOOLCHAIN and reports itself.
		if f := strings.Fields(id.Version); len(f) < 3 || f[2] != cfg.Version {
			return fmt.Errorf("%w: with GOTOOLCHAIN=%s the go command on PATH said %q: it cannot switch toolchains (Go 1.21 or later can; %s)",
				ErrMissing, cfg.Version, id.Version, InstallHint("go"))
		}
		return nil
	case a.Name == "node-fetch":
		dir, v, err := findUndici(cfg.Version, undiciDirs())
		if err != nil {
			return err
		}
		id.undici = dir
		id.Version += "; fetch from undici " + v + " (" + dir + ")"
		return nil
	case a.Name == "libcurl":
		// The probe loaded the release asked for or failed (probeCommand); the run loads it
		// again by the same rule (libcurl.py, KALAB_LIBCURL_VERSION).
		id.libcurl = cfg.Version
		return nil
	}
	return fmt.Errorf("the %s adapter takes no version", a.Name)
}

// findUndici returns the first undici package in dirs whose version is want or begins with
// want and a dot (7 finds 7.30.3), and that version. None is ErrMissing, saying what it
// found instead.
func findUndici(want string, dirs []string) (dir, version string, err error) {
	var found []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, pkg := range []string{filepath.Join(d, "node_modules", "undici"), d} {
			v, err := undiciVersion(pkg)
			if err != nil {
				continue
			}
			if v == want || strings.HasPrefix(v, want+".") {
				abs, err := filepath.Abs(pkg)
				if err != nil {
					return "", "", err
				}
				return abs, v, nil
			}
			found = append(found, v+" in "+pkg)
			break
		}
	}
	have := "nothing"
	if len(found) > 0 {
		have = "undici " + strings.Join(found, ", ")
	}
	return "", "", fmt.Errorf("%w: the node-fetch adapter needs undici %s, and $%s (%q) holds %s: npm install --prefix DIR undici@%s, then list DIR in $%s",
		ErrMissing, want, EnvUndiciPath, os.Getenv(EnvUndiciPath), have, want, EnvUndiciPath)
}

// undiciVersion reads the version of the undici package in dir.
func undiciVersion(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct{ Name, Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", err
	}
	if pkg.Name != "undici" || pkg.Version == "" {
		return "", errors.New("not an undici package")
	}
	return pkg.Version, nil
}

// undiciDirs are where node-fetch looks for an undici release: the directories
// $KALAB_UNDICI_PATH lists, or when it is unset the npm prefixes under /opt/kalab
// (/opt/kalab/undici7, where .ci/preamble installs undici 7), as the libcurl adapter looks in
// /opt/kalab/libcurl-VERSION.
func undiciDirs() []string {
	if v, ok := os.LookupEnv(EnvUndiciPath); ok {
		return filepath.SplitList(v)
	}
	dirs, _ := filepath.Glob("/opt/kalab/undici*")
	return dirs
}
