package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/buildinfo"
)

//go:embed initdata/first.yaml initdata/kalab.yml
var initData embed.FS

// initFiles are what `kalab init` writes, relative to its directory, and from where.
var initFiles = []struct{ path, from string }{
	{"scenarios/first.yaml", "initdata/first.yaml"},
	{".github/workflows/kalab.yml", "initdata/kalab.yml"},
}

func cmdInit(args []string, stdout, stderr io.Writer) int {
	fset, _ := flagSet("init", "init [DIR]  (default: the working directory)\n\n"+
		"Writes a starter scenario (scenarios/first.yaml) and a GitHub Actions workflow\n"+
		"(.github/workflows/kalab.yml) into DIR; then `kalab run scenarios` in DIR runs it.", stdout, stderr)
	force := fset.Bool("force", false, "replace files that exist")
	if ok, code := parseFlags(fset, args); !ok {
		return code
	}
	if fset.NArg() > 1 {
		fmt.Fprintf(stderr, "kalab init: takes one directory (got %d arguments)\n", fset.NArg())
		return exitInvalid
	}
	dir := "."
	if fset.NArg() == 1 {
		dir = fset.Arg(0)
	}
	if !*force {
		for _, f := range initFiles {
			if _, err := os.Lstat(filepath.Join(dir, f.path)); err == nil {
				fmt.Fprintf(stderr, "kalab init: %s exists; nothing written (--force replaces it)\n", filepath.Join(dir, f.path))
				return exitInvalid
			} else if !errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(stderr, "kalab init: %v\n", err)
				return exitInvalid
			}
		}
	}
	for _, f := range initFiles {
		data, err := initData.ReadFile(f.from)
		if err != nil {
			fmt.Fprintf(stderr, "kalab init: %v\n", err)
			return exitEngine
		}
		data = bytes.ReplaceAll(data, []byte("KALAB_REF"), []byte(buildinfo.Read(version, commit).Ref()))
		path := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintf(stderr, "kalab init: %v\n", err)
			return exitInvalid
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintf(stderr, "kalab init: %v\n", err)
			return exitInvalid
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	fmt.Fprintf(stdout, "next: kalab run %s\n", filepath.Join(dir, "scenarios"))
	return exitOK
}
