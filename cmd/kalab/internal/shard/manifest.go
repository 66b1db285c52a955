package shard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/kalab-dev/kalab/engine/atomicfile"
)

// ManifestFile is the name of the manifest in a shard's run directory.
const ManifestFile = "shard.json"

// ManifestVersion is the version of the manifest layout; readers reject other versions.
const ManifestVersion = 1

// Manifest is written beside results.jsonl by kalab run --shard: what was split, how, and
// which part this directory holds. Every shard of one split carries the whole assignment, so
// kalab merge can tell a missing shard's runs from a run that never existed.
type Manifest struct {
	Record        string `json:"record"` // "shard"
	RecordVersion int    `json:"record_version"`
	KalabVersion  string `json:"kalab_version"`
	RunID         string `json:"run_id"`
	Shard         int    `json:"shard"`  // 1-based index of this directory's part
	Shards        int    `json:"shards"` // how many parts
	// PlanHash identifies the plan that was split (after --filter; see PlanHash).
	PlanHash string `json:"plan_hash"`
	// Paths are the files or directories named on the command line (scenarios/ when none).
	Paths []string `json:"paths"`
	// Files are the scenario files loaded from them, in path order.
	Files     []string `json:"files"`
	Filter    string   `json:"filter,omitempty"`
	TimeScale float64  `json:"time_scale,omitempty"` // --time-scale, when given
	Seed      *int64   `json:"seed,omitempty"`       // --seed, when given
	// Weights says what the split was balanced by: "plan" (compile.Run.Expected) or the results
	// file given to --shard-weights.
	Weights    string   `json:"weights"`
	SplitFiles []string `json:"split_files,omitempty"`
	// Runs is every run of the plan with the shard it went to.
	Runs []Run `json:"runs"`
}

// NewManifest describes shard index of split s.
func NewManifest(s *Split, index int) *Manifest {
	return &Manifest{Record: "shard", RecordVersion: ManifestVersion, Shard: index, Shards: s.Count,
		SplitFiles: s.SplitFiles, Runs: slices.Clone(s.Runs)}
}

// SplitKey identifies the split itself: two shards with the same key agree on where every
// run goes.
func (m *Manifest) SplitKey() string {
	b, _ := json.Marshal(struct {
		N    int
		Hash string
		Runs []Run
	}{m.Shards, m.PlanHash, m.Runs})
	return string(b)
}

// Mine returns the runs placed on this manifest's shard.
func (m *Manifest) Mine() []Run {
	return m.Of(m.Shard)
}

// Of returns the runs placed on shard index.
func (m *Manifest) Of(index int) []Run {
	var out []Run
	for _, r := range m.Runs {
		if r.Shard == index {
			out = append(out, r)
		}
	}
	return out
}

// Write writes the manifest into dir through a temporary file, so a reader never sees half.
func (m *Manifest) Write(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, ManifestFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), atomicfile.Mode); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp) // the error returned says what failed
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// ReadManifest reads dir/shard.json, rejecting unknown fields and other versions.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	switch {
	case m.Record != "shard":
		return nil, fmt.Errorf("%s: record %q, want shard", p, m.Record)
	case m.RecordVersion != ManifestVersion:
		return nil, fmt.Errorf("%s: record_version %d; this kalab reads version %d", p, m.RecordVersion, ManifestVersion)
	case m.Shards < 1 || m.Shard < 1 || m.Shard > m.Shards:
		return nil, fmt.Errorf("%s: shard %d/%d is out of range", p, m.Shard, m.Shards)
	}
	return &m, nil
}
