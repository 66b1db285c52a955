package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

// Reuse holds the runs of an earlier results file that kalab run --reuse-real takes
// instead of running a real program again: each passed run that a real program took part
// in (a client.exec, a real server), by file, variant, seed and resolved settings.
type Reuse struct {
	From string // the results file
	runs map[reuseKey]*report.Run
}

type reuseKey struct {
	file, variant, params string
	seed                  int64
}

// LoadReuse reads the runs of path (a results.jsonl, or a run directory holding one, read
// and checked as a baseline is) that a later invocation may reuse.
func LoadReuse(path string) (*Reuse, error) {
	res, err := baseline.Load(path)
	if err != nil {
		return nil, err
	}
	u := &Reuse{From: res.Path, runs: map[reuseKey]*report.Run{}}
	for i := range res.Runs {
		r := &res.Runs[i]
		var params bytes.Buffer
		if r.Status == report.StatusPass && json.Compact(&params, r.Params) == nil {
			u.runs[reuseKey{r.File, r.Variant, params.String(), r.Seed}] = r
		}
	}
	return u, nil
}

// Len is how many runs the file offers.
func (u *Reuse) Len() int { return len(u.runs) }

// take returns the earlier record of j's run, as a record of this invocation, when c needs a
// real program and the file holds a passed run of it with the same settings; nil
// otherwise, and the run runs. The observer sees it start and end. The record keeps its measurements, timing and checks; it
// names where it came from in its notes, and it points at no requests file (they lie in
// the earlier run's directory).
func (u *Reuse) take(j job, opt Options) *report.Run {
	c := j.c
	if u == nil || c.Virtual() || (c.Exec == nil && !c.Settings.Server.Real()) {
		return nil
	}
	st := c.Settings
	old := u.runs[reuseKey{c.Scenario.File, c.Source.Variant, string(paramsJSON(st)), st.Load.Seed}]
	if old == nil {
		return nil
	}
	rec := *old
	rec.RunID = opt.RunID
	rec.RequestsFile, rec.ConnectionsFile = "", ""
	rec.Checks = slices.Clone(old.Checks)
	rec.Notes = append(slices.Clone(old.Notes), fmt.Sprintf("not run again: taken from %s (run %s, %s) by --reuse-real",
		u.From, old.RunID, old.StartedAt.Format("2006-01-02 15:04:05Z07:00")))
	if opt.Observer != nil {
		opt.Observer.RunStarted(j.run, st.Load.Requests)
		opt.Observer.RunEnded(j.run, &rec)
	}
	return &rec
}
