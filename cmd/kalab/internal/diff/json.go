package diff

import (
	"encoding/json"
	"io"

	"github.com/kalab-dev/kalab/engine/gate"
)

// DiffDocument is `kalab diff --format json`: every run's comparison, every metric of a
// compared run (the table's --all), and the counts the table ends with.
type DiffDocument struct {
	Runs   []DiffRunJSON  `json:"runs"`
	Counts DiffCountsJSON `json:"counts"`
}

// DiffCountsJSON is DiffCounts with the names the JSON document uses.
type DiffCountsJSON struct {
	Compared      int `json:"compared"`
	Regressed     int `json:"regressed"`
	Improved      int `json:"improved"`
	New           int `json:"new"`
	Missing       int `json:"missing"`
	NotComparable int `json:"not_comparable"`
}

// DiffRunJSON is one run of NEW against OLD.
type DiffRunJSON struct {
	Scenario      string           `json:"scenario"`
	Variant       string           `json:"variant"`
	File          string           `json:"file,omitempty"`
	State         string           `json:"state"`
	Note          string           `json:"note,omitempty"`
	BaselineRunID string           `json:"baseline_run_id,omitempty"`
	Metrics       []DiffMetricJSON `json:"metrics,omitempty"`
}

// DiffMetricJSON is one metric's row: the values, the change and tolerance as the table
// writes them, the slack allowed in the metric's unit, and the verdict.
type DiffMetricJSON struct {
	Metric    string  `json:"metric"`
	Old       float64 `json:"old"`
	New       float64 `json:"new"`
	Change    string  `json:"change"`
	Tolerance string  `json:"tolerance"`
	Slack     float64 `json:"slack"`
	Verdict   string  `json:"verdict"`
}

// DiffJSON writes diffs as one indented JSON document.
func DiffJSON(w io.Writer, diffs []gate.RunDiff) error {
	c := Count(diffs)
	doc := DiffDocument{Runs: make([]DiffRunJSON, 0, len(diffs)),
		Counts: DiffCountsJSON(c)}
	for _, d := range diffs {
		r := DiffRunJSON{Scenario: d.Scenario, Variant: d.Variant, File: d.File, State: d.State, Note: d.Note, BaselineRunID: d.BaselineRunID}
		for _, m := range d.Metrics {
			r.Metrics = append(r.Metrics, DiffMetricJSON{Metric: m.Metric, Old: m.Old, New: m.New, Change: m.Change(),
				Tolerance: appliedTolerance(m), Slack: m.Slack, Verdict: m.Verdict})
		}
		doc.Runs = append(doc.Runs, r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
