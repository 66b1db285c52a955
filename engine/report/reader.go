package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kalab-dev/kalab/engine/atomicfile"
)

// Results is what a results.jsonl holds.
type Results struct {
	Runs      []Run
	Scenarios []Scenario
	// Invocation is the last invocation record; nil in files written before kalab wrote
	// one (their completeness is unknown).
	Invocation *Invocation
	// Skipped counts, by kind, the records ReadAny passed over: kinds this kalab does not
	// know (added by a newer one). An invocation record of another layout is passed over
	// uncounted: it says nothing a reader could draw.
	Skipped map[string]int
}

// ReadFile reads a results.jsonl, rejecting unknown record kinds, fields and versions;
// errors name the line that is wrong.
func ReadFile(path string) (*Results, error) { return readFile(path, false) }

// ReadAny reads a results.jsonl for a reader that draws what it knows (kalab report): records of
// kinds it does not know are counted in Skipped, unknown fields and record versions are
// taken as they come. Only a line that is not JSON, or a run or scenario record that does
// not decode, is an error.
func ReadAny(path string) (*Results, error) { return readFile(path, true) }

func readFile(path string, lenient bool) (*Results, error) {
	f, err := atomicfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	res, err := read(f, lenient)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return res, nil
}

// read parses results.jsonl records; strict unless lenient (ReadAny).
func read(r io.Reader, lenient bool) (*Results, error) {
	res := &Results{Skipped: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := res.add(b, line, lenient); err != nil {
			return nil, err
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

// add decodes one line.
func (res *Results) add(b []byte, line int, lenient bool) error {
	var head struct {
		Record  string `json:"record"`
		Version int    `json:"record_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("%d: not a JSON object: %v", line, err)
	}
	if head.Version != RecordVersion && !lenient {
		return fmt.Errorf("%d: record_version %d; this kalab reads version %d", line, head.Version, RecordVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if !lenient {
		dec.DisallowUnknownFields()
	}
	switch head.Record {
	case "run":
		var run Run
		if err := dec.Decode(&run); err != nil {
			return fmt.Errorf("%d: run record: %v", line, err)
		}
		run.line = line
		run.Upgrade()
		res.Runs = append(res.Runs, run)
	case "scenario":
		var s Scenario
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("%d: scenario record: %v", line, err)
		}
		s.Upgrade()
		res.Scenarios = append(res.Scenarios, s)
	case "invocation":
		var inv Invocation
		switch err := dec.Decode(&inv); {
		case err == nil:
			res.Invocation = &inv
		case !lenient:
			return fmt.Errorf("%d: invocation record: %v", line, err)
		}
	default:
		if !lenient {
			return fmt.Errorf("%d: unknown record %q (want run, scenario or invocation)", line, head.Record)
		}
		res.Skipped[head.Record]++
	}
	return nil
}
