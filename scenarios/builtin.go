package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Prefix names the scenarios embedded in the binary: "builtin:" is the whole bundled suite,
// "builtin:04-stale-race.yaml" or "builtin:truth" a part of it.
const Prefix = "builtin:"

// Resolve maps a builtin: argument to the embedded files, written out into a directory of
// their own under the temporary directory so that every file:line:col points at a file that
// exists. An argument without the prefix is returned as it is; one with it always means the
// embedded files, never a file on disk of that name (./builtin:x names such a file).
func Resolve(arg string) (string, error) {
	name, ok := strings.CutPrefix(arg, Prefix)
	if !ok {
		return arg, nil
	}
	dir, err := extracted()
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

// extracted writes the embedded files out once per process (extractBuiltin).
var extracted = sync.OnceValues(extractBuiltin)

// embedded is every bundled file by its slash path, and a hash of them all.
func embedded() (map[string][]byte, string, error) {
	files := map[string][]byte{}
	h := sha256.New()
	err := fs.WalkDir(Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := Files.ReadFile(p)
		if err != nil {
			return err
		}
		files[p] = b
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return files, hex.EncodeToString(h.Sum(nil))[:16], err
}

// extractBuiltin returns a directory that holds exactly the embedded files. A directory a
// kalab of the same content wrote before (named by the user and the files' hash) is reused
// only when verify finds it kalab's: owned by this user, writable by no one else, and holding
// the embedded files byte for byte and nothing more. Anything else there (a file another user
// planted, one edited since, a directory someone else made under the name) is never read:
// a directory of this user's own is written anew, and where the name is taken by someone
// else, the files go to a fresh private directory of this process instead. The files are
// written to a fresh directory (mode 0700) and renamed into place, so two kalab processes at
// once never see half a suite.
func extractBuiltin() (string, error) {
	files, sum, err := embedded()
	if err != nil {
		return "", err
	}
	top := filepath.Join(os.TempDir(), "kalab-builtin-"+userTag()+sum)
	dir := filepath.Join(top, "scenarios")
	if verify(top, files) == nil {
		return dir, nil
	}
	if ownDir(top) {
		if err := os.RemoveAll(top); err != nil {
			return "", err
		}
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "kalab-builtin-")
	if err != nil {
		return "", err
	}
	if err := write(filepath.Join(tmp, "scenarios"), files); err != nil {
		_ = os.RemoveAll(tmp) // the error returned says what failed
		return "", err
	}
	if err := os.Rename(tmp, top); err == nil || verify(top, files) == nil {
		if err != nil {
			_ = os.RemoveAll(tmp) // another kalab wrote the same files first
		}
		return dir, nil
	}
	// The name is someone else's: this process keeps its own copy.
	return filepath.Join(tmp, "scenarios"), nil
}

// userTag sets users apart in the directory's name, so one user's copy never stands in
// another's way.
func userTag() string {
	if uid := os.Getuid(); uid >= 0 {
		return strconv.Itoa(uid) + "-"
	}
	return ""
}

func write(dir string, files map[string][]byte) error {
	for p, b := range files {
		out := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// errNotOurs is verify's answer for a directory kalab cannot vouch for.
var errNotOurs = errors.New("not kalab's own copy of the bundled scenarios")

// verify reports whether top holds scenarios/ with exactly the embedded files: every entry
// a directory or a regular file (no links, no FIFOs), owned by this user and writable by no
// one else (private), the files' bytes the embedded ones, and none missing or extra.
func verify(top string, files map[string][]byte) error {
	if err := private(top); err != nil {
		return err
	}
	dir := filepath.Join(top, "scenarios")
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := private(p); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		want, ok := files[filepath.ToSlash(rel)]
		if !ok {
			return fmt.Errorf("%s: %w", p, errNotOurs)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s: %w", p, errNotOurs)
		}
		seen++
		return nil
	})
	if err == nil && seen != len(files) {
		err = fmt.Errorf("%s: %d of %d files: %w", dir, seen, len(files), errNotOurs)
	}
	return err
}

// private reports whether p (not followed if a link) is a directory or regular file that
// this user owns and no one else may write.
func private(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsDir() && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %v: %w", p, fi.Mode().Type(), errNotOurs)
	}
	if !lockedToMe(fi) {
		return fmt.Errorf("%s: %w", p, errNotOurs)
	}
	return nil
}

// ownDir reports whether p is a directory (not a link) of this user's, kalab's to replace.
func ownDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir() && lockedToMe(fi)
}
