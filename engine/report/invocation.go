package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// States of an invocation record.
const (
	// InvocationStarted is the first line of results.jsonl. A file whose last invocation
	// record is still this one was cut short: the process was killed (out of memory,
	// SIGKILL, power loss) before it could say how the invocation ended.
	InvocationStarted = "started"
	// InvocationEnded is the last line of an invocation that ended by itself, completed or not.
	InvocationEnded = "ended"
	// InvocationCrashed is written by the supervising parent after the process running the
	// plan died (a panic, a fatal runtime error or a signal).
	InvocationCrashed = "crashed"
)

// Invocation is the record of one kalab run invocation: what it planned and how it ended.
// It is written first (state started) and again last (ended or crashed); the last one in the
// file is the one that counts. Several invocation records of the same plan (one per shard)
// can be checked against each other by PlanHash, Shard and the counts.
type Invocation struct {
	Record        string `json:"record"` // "invocation"
	RecordVersion int    `json:"record_version"`
	KalabVersion  string `json:"kalab_version"`
	RunID         string `json:"run_id"`
	State         string `json:"state"`
	// Completed is true when every planned run has a record and none was interrupted: the
	// file may be used as a baseline. Runs that ended in error still count as recorded.
	Completed bool   `json:"completed"`
	Reason    string `json:"reason,omitempty"` // why it did not complete
	// PlanHash identifies the whole plan before --filter: every scenario, variant and its
	// resolved settings, with --time-scale and --seed applied (sha256, hex).
	PlanHash    string     `json:"plan_hash"`
	Filter      string     `json:"filter,omitempty"`
	Shard       string     `json:"shard,omitempty"` // "i/n" when the plan was split (kalab merge)
	Planned     int        `json:"runs_planned"`    // runs selected for this invocation
	Recorded    int        `json:"runs_recorded"`   // run records written
	Interrupted int        `json:"runs_interrupted"`
	Errored     int        `json:"runs_errored"`
	StartedAt   time.Time  `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
}

// Tally counts the runs recorded, interrupted and errored.
func (inv *Invocation) Tally(runs []Run) {
	inv.Recorded, inv.Interrupted, inv.Errored = 0, 0, 0
	for _, r := range runs {
		inv.count(r.Status)
	}
}

// count adds one run record of the status to the counts.
func (inv *Invocation) count(status string) {
	inv.Recorded++
	switch status {
	case StatusInterrupted:
		inv.Interrupted++
	case StatusError:
		inv.Errored++
	}
}

// Describe says in a few words how the invocation ended, for messages about a baseline.
func (inv *Invocation) Describe() string {
	s := fmt.Sprintf("%d of %d runs recorded, %d interrupted", inv.Recorded, inv.Planned, inv.Interrupted)
	switch {
	case inv.State == InvocationStarted:
		s += "; the process ended without a closing record (killed?)"
	case inv.Reason != "":
		s += "; " + inv.Reason
	}
	return s
}

// Seal closes the results of an invocation whose process died: when results.jsonl does not
// end in a closing invocation record, it cuts a partial last line, appends a record of state
// crashed (completed false, the counts read from the file, reason as given) and points
// <out>/latest at the run. It reports whether it wrote a record.
func Seal(out, runID, reason string, now time.Time) (bool, error) {
	p := filepath.Join(out, runID, ResultsFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return false, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1]
		if err := os.Truncate(p, int64(len(data))); err != nil {
			return false, fmt.Errorf("cut the partial last line of %s: %w", p, err)
		}
	}
	res, err := read(bytes.NewReader(data), false)
	if err != nil {
		return false, fmt.Errorf("%s:%w", p, err)
	}
	if last := res.Invocation; last != nil && last.State != InvocationStarted {
		return false, nil
	}
	inv := &Invocation{RunID: runID, StartedAt: now}
	if res.Invocation != nil {
		*inv = *res.Invocation
	}
	inv.State, inv.Completed, inv.Reason, inv.EndedAt = InvocationCrashed, false, reason, &now
	inv.Tally(res.Runs)
	inv.Record, inv.RecordVersion = "invocation", RecordVersion
	line, err := json.Marshal(inv)
	if err != nil {
		return false, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return false, err
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Truncate(p, int64(len(data))) // the write error returned is the news; this only tries to take back a partial line
		return false, fmt.Errorf("write %s: %w", p, unwrapPath(err))
	}
	return true, pointLatest(out, runID)
}
