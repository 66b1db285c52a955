package scenario

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden .err files of testdata/bad")

// TestBadCorpus loads every file of testdata/bad and compares the diagnostics with the golden
// file beside it: each must be rejected, with a position, quickly, and without a panic.
func TestBadCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("the bad corpus has %d files; it must keep at least 40", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			plan, err := LoadFiles([]string{f})
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("loading took %v", elapsed)
			}
			if err == nil {
				t.Fatalf("loaded %d runs; want it rejected", plan.Runs())
			}
			var ds Diagnostics
			if !errors.As(err, &ds) || len(ds) == 0 {
				t.Fatalf("error is %T %v; want Diagnostics", err, err)
			}
			for _, d := range ds {
				if d.Line < 1 || d.Col < 1 {
					t.Errorf("diagnostic without a position: %s", d)
				}
				if strings.Contains(d.Message, "internal error") {
					t.Errorf("loader panicked: %s", d)
				}
			}
			got := ds.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("no golden file (run go test ./engine/scenario -run BadCorpus -update): %v", err)
			}
			if got != string(want) {
				t.Errorf("diagnostics differ\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestHugeFileRejectedUnread(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "huge.yaml")
	body := append([]byte("name: huge\ndescription: "), bytes.Repeat([]byte("x"), 10<<20)...)
	if err := os.WriteFile(f, body, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFiles([]string{f})
	if err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Fatalf("err = %v; want a size error", err)
	}
}

func TestDuplicateScenarioNamesAcrossFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	if err := os.WriteFile(a, []byte("name: same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("# second\nname: same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFiles([]string{a, b})
	want := b + `:2:1: name: scenario name "same" is already used by ` + a
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	_, err := LoadFiles([]string{"testdata/no-such-file.yaml"})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
	if _, err := FindFiles([]string{"testdata/no-such-dir"}); err == nil {
		t.Fatal("FindFiles accepted a missing directory")
	}
}
