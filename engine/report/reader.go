package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Results is what a results.jsonl holds.
type Results struct {
	Runs      []Run
	Scenarios []Scenario
	// Invocation is the last invocation record; nil in files written before kalab wrote
	// one (their completeness is unknown).
	Invocation *Invocation
}

// ReadFile reads a results.jsonl; errors name the line that is wrong.
func ReadFile(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return res, nil
}

// Read parses results.jsonl records, rejecting unknown record kinds and versions.
func Read(r io.Reader) (*Results, error) {
	res := &Results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var head struct {
			Record  string `json:"record"`
			Version int    `json:"record_version"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return nil, fmt.Errorf("%d: not a JSON object: %v", line, err)
		}
		if head.Version != RecordVersion {
			return nil, fmt.Errorf("%d: record_version %d; this kalab reads version %d", line, head.Version, RecordVersion)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		switch head.Record {
		case "run":
			var run Run
			if err := dec.Decode(&run); err != nil {
				return nil, fmt.Errorf("%d: run record: %v", line, err)
			}
			run.line = line
			run.Upgrade()
			res.Runs = append(res.Runs, run)
		case "scenario":
			var s Scenario
			if err := dec.Decode(&s); err != nil {
				return nil, fmt.Errorf("%d: scenario record: %v", line, err)
			}
			s.Upgrade()
			res.Scenarios = append(res.Scenarios, s)
		case "invocation":
			var inv Invocation
			if err := dec.Decode(&inv); err != nil {
				return nil, fmt.Errorf("%d: invocation record: %v", line, err)
			}
			res.Invocation = &inv
		default:
			return nil, fmt.Errorf("%d: unknown record %q (want run, scenario or invocation)", line, head.Record)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%d: %v", line+1, err)
	}
	if inv := res.Invocation; inv != nil && inv.State == InvocationStarted {
		// Cut short before the closing record: count what the file holds.
		inv.Tally(res.Runs)
	}
	return res, nil
}
