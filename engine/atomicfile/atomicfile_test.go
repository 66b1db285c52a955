package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesRegularFileWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.xml")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "new content"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new content" {
		t.Fatalf("content %q", b)
	}
	// A failing fill leaves the old file and no temporary file behind.
	boom := errors.New("boom")
	err := Write(p, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new content" {
		t.Fatalf("a failed write changed the file: %q", b)
	}
	assertOnly(t, dir, "out.xml")
}

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.xml")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.xml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{link, "is a symbolic link"},
		{fifo, "is a named pipe (FIFO)"},
		{sub, "is a directory"},
		{"/dev/null", "is a character device"},
		{filepath.Join(dir, "missing", "x.xml"), "no such file or directory"},
	} {
		for name, err := range map[string]error{
			"Check": Check(c.path),
			"Write": Write(c.path, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }),
		} {
			var re *RefusedError
			refused := errors.As(err, &re) || (name == "Write" && strings.HasPrefix(c.want, "no such"))
			if !refused || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s(%s) = %v, want a RefusedError saying %q", name, c.path, err, c.want)
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", st, err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st, err)
	}
	assertOnly(t, dir, "fifo", "link.xml", "real.xml", "sub")
}

// A target replaced by something else between Create and Commit is still refused.
func TestCommitRechecksTarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.xml")
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "x")
	if err := os.Symlink("/dev/null", p); err != nil {
		t.Fatal(err)
	}
	var re *RefusedError
	if err := f.Commit(); !errors.As(err, &re) {
		t.Fatalf("Commit over a symlink = %v", err)
	}
	assertOnly(t, dir, "r.xml")
}

func TestCheckDirNotWritable(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes anywhere but on a read-only mount: /proc/sys is one on Linux.
		if err := CheckDir("/proc/sys"); err == nil {
			t.Fatal("CheckDir(/proc/sys) succeeded")
		}
		return
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := CheckDir(dir); err == nil || !strings.Contains(err.Error(), "cannot create files there") {
		t.Fatalf("CheckDir(read-only) = %v", err)
	}
}

// assertOnly fails when dir holds other entries than names (a leftover temporary file).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}
