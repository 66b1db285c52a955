package explain

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/report"
)

// Load reads the run named scenario/variant (or variant alone, or scenario alone when it has
// one run) from a results directory, with its request and connection files.
func Load(dir, name string) (*Run, error) {
	res, err := report.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		return nil, err
	}
	rec, err := pick(res.Runs, name)
	if err != nil {
		return nil, err
	}
	if rec.RequestsFile == "" {
		return nil, fmt.Errorf("run %s / %s wrote no request file (status %s%s): there is nothing to explain", rec.Scenario, rec.Variant, rec.Status, errSuffix(rec.Error))
	}
	var reqs []report.Request
	if err := readLines(filepath.Join(dir, rec.RequestsFile), func(b []byte) error {
		var q report.Request
		err := json.Unmarshal(b, &q)
		reqs = append(reqs, q)
		return err
	}); err != nil {
		return nil, err
	}
	var conns []report.Conn
	if rec.ConnectionsFile != "" {
		if err := readLines(filepath.Join(dir, rec.ConnectionsFile), func(b []byte) error {
			var c report.Conn
			err := json.Unmarshal(b, &c)
			conns = append(conns, c)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return NewRun(rec, reqs, conns)
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// pick finds one run by name: "scenario/variant", a variant, or a scenario with one run.
// With no name, the results must hold exactly one run.
func pick(runs []report.Run, name string) (*report.Run, error) {
	var found []*report.Run
	var all []string
	for i := range runs {
		r := &runs[i]
		all = append(all, r.Scenario+"/"+r.Variant)
		if name == "" || name == r.Scenario+"/"+r.Variant || name == r.Variant || name == r.Scenario {
			found = append(found, r)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0 && name == "":
		return nil, fmt.Errorf("the results hold no run")
	case len(found) == 0:
		return nil, fmt.Errorf("no run named %q; the results hold %v", name, all)
	}
	return nil, fmt.Errorf("%d runs match %q; name one with --run SCENARIO/VARIANT: %v", len(found), name, all)
}

func readLines(path string, each func([]byte) error) error {
	f, err := atomicfile.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := each(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
	}
	return sc.Err()
}
