package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Prefix names the scenarios embedded in the binary: "builtin:" is the whole bundled suite,
// "builtin:04-stale-race.yaml" or "builtin:truth" a part of it.
const Prefix = "builtin:"

// Resolve maps a builtin: argument to the embedded files, written out once per content
// into a directory of their own under the temporary directory, so that every
// file:line:col points at a file that exists. A path on disk of the same name, and an
// argument without the prefix, are returned as they are.
func Resolve(arg string) (string, error) {
	name, ok := strings.CutPrefix(arg, Prefix)
	if !ok {
		return arg, nil
	}
	if _, err := os.Stat(arg); err == nil {
		return arg, nil
	}
	dir, err := extractBuiltin()
	if err != nil {
		return "", fmt.Errorf("the bundled scenarios: %w", err)
	}
	name = path.Clean("/" + name)[1:]
	if _, err := fs.Stat(Files, orDot(name)); err != nil {
		return "", fmt.Errorf("%s: no bundled scenario of that name (kalab validate builtin: lists them)", arg)
	}
	return filepath.Join(dir, filepath.FromSlash(name)), nil
}

func orDot(name string) string {
	if name == "" {
		return "."
	}
	return name
}

// extractBuiltin writes the embedded files into a directory named by their hash and
// returns it; a directory already written for the same content is reused. The files are
// written to a fresh directory and renamed into place, so two kalab processes at once
// never see half a suite.
func extractBuiltin() (string, error) {
	h := sha256.New()
	var files []string
	err := fs.WalkDir(Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := Files.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "kalab-builtin-"+hex.EncodeToString(h.Sum(nil))[:16], "scenarios")
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, p := range files {
		b, _ := Files.ReadFile(p)
		out := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil // another kalab wrote the same files first
		}
		return "", err
	}
	return dir, nil
}
