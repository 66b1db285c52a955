package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/validate"
)

// builtin: is the bundled suite as the checkout has it: the same files, scenarios and runs,
// loaded from wherever kalab runs.
func TestBuiltinIsTheBundledSuite(t *testing.T) {
	load := func(arg string) validate.Document {
		t.Helper()
		var out, errb strings.Builder
		if code := Main([]string{"validate", "--format", "json", arg}, &out, &errb); code != exitOK {
			t.Fatalf("validate %s: exit %d: %s", arg, code, errb.String())
		}
		var doc validate.Document
		if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	disk, builtin := load("../../scenarios"), load("builtin:")
	if len(disk.Files) < 10 || len(builtin.Files) != len(disk.Files) || builtin.Runs != disk.Runs {
		t.Fatalf("builtin: %d files, %d runs; scenarios/ on disk %d files, %d runs", len(builtin.Files), builtin.Runs, len(disk.Files), disk.Runs)
	}
	for i := range disk.Scenarios {
		if b, d := builtin.Scenarios[i], disk.Scenarios[i]; b.Name != d.Name || b.Runs != d.Runs || b.Checks != d.Checks {
			t.Errorf("scenario %d: builtin %+v, disk %+v", i, b, d)
		}
	}
	if one := load("builtin:04-stale-race.yaml"); len(one.Scenarios) != 1 || one.Scenarios[0].Name != "stale-race" {
		t.Errorf("builtin:04-stale-race.yaml loads %+v", one.Scenarios)
	}
	var errb strings.Builder
	if code := Main([]string{"validate", "builtin:nope.yaml"}, &strings.Builder{}, &errb); code != exitInvalid {
		t.Errorf("builtin:nope.yaml: exit %d, want %d", code, exitInvalid)
	}
}
