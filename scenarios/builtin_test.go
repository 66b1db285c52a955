package scenarios

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// extractIn runs extractBuiltin with TMPDIR at dir and returns what it gave.
func extractIn(t *testing.T, dir string) string {
	t.Helper()
	t.Setenv("TMPDIR", dir)
	got, err := extractBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sameAsEmbedded fails unless dir holds exactly the embedded files.
func sameAsEmbedded(t *testing.T, dir string) {
	t.Helper()
	files, _, err := embedded()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want, ok := files[filepath.ToSlash(rel)]
		got, rerr := os.ReadFile(p)
		if !ok || rerr != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not the embedded file (known %v, read error %v)", rel, ok, rerr)
		}
		n++
		return nil
	})
	if err != nil || n != len(files) {
		t.Fatalf("%s: %d files (walk error %v), want the %d embedded", dir, n, err, len(files))
	}
}

const planted = "name: planted\nclient: {preset: curl-loop}\nload: {requests: 1}\n"

// A copy written before is reused only while it is exactly kalab's; a file planted or edited
// in it, a link, a mode that lets others write, or a copy owned by someone else is never read.
func TestBuiltinNeverReadsAPlantedFile(t *testing.T) {
	tmp := t.TempDir()
	first := extractIn(t, tmp)
	sameAsEmbedded(t, first)
	if again := extractIn(t, tmp); again != first {
		t.Fatalf("an intact copy is not reused: %s, then %s", first, again)
	}
	top := filepath.Dir(first)
	cases := []struct {
		name  string
		plant func(t *testing.T)
		unix  bool
	}{
		{"edited", func(t *testing.T) { write1(t, filepath.Join(first, "truth", "chromium.yaml")) }, false},
		{"extra", func(t *testing.T) { write1(t, filepath.Join(first, "truth", "zz-planted.yaml")) }, false},
		{"missing", func(t *testing.T) { rm(t, filepath.Join(first, "truth", "curl.yaml")) }, false},
		{"world-writable", func(t *testing.T) { chmod(t, filepath.Join(first, "truth"), 0o777) }, true},
		{"group-writable file", func(t *testing.T) { chmod(t, filepath.Join(first, "04-stale-race.yaml"), 0o620) }, true},
		{"link", func(t *testing.T) {
			other := filepath.Join(t.TempDir(), "truth")
			if err := os.CopyFS(other, os.DirFS(filepath.Join(first, "truth"))); err != nil {
				t.Fatal(err)
			}
			write1(t, filepath.Join(other, "chromium.yaml"))
			rm(t, filepath.Join(first, "truth"))
			if err := os.Symlink(other, filepath.Join(first, "truth")); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.unix && runtime.GOOS == "windows" {
				t.Skip("Unix modes and links")
			}
			c.plant(t)
			got := extractIn(t, tmp)
			sameAsEmbedded(t, got)
		})
	}

	t.Run("someone else's", func(t *testing.T) {
		if runtime.GOOS == "windows" || os.Geteuid() != 0 {
			t.Skip("giving a directory to another user needs root")
		}
		if err := os.Chown(top, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		write1(t, filepath.Join(first, "truth", "chromium.yaml"))
		got := extractIn(t, tmp)
		if strings.HasPrefix(got, top) {
			t.Fatalf("kalab used %s, a directory another user owns", got)
		}
		sameAsEmbedded(t, got)
		if fi, err := os.Stat(filepath.Dir(got)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("its own copy %s: %v, %v; want mode 0700", got, fi.Mode(), err)
		}
	})
}

func write1(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
}

func rm(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
