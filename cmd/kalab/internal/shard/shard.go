// Package shard splits a plan into N parts of about equal expected duration, the same way on
// every machine, so that a CI matrix or a Kubernetes Indexed Job can run one part per job
// and kalab merge can put the results back together.
package shard

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// MaxSpread is the balance the split aims for: while the lightest shard is more than this
// fraction lighter than the heaviest, the heaviest scenario file still kept whole is split
// into its runs. Whole files keep a file's compare checks on one machine; splitting one is
// the price of not waiting for a single long file.
const MaxSpread = 0.2

// MaxShards bounds N; a larger matrix than this is a typo.
const MaxShards = 1000

// Spec is a shard of a split: Index of Count, 1-based.
type Spec struct{ Index, Count int }

// String renders "i/n".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Parse reads "i/n" (1-based: 1/3, 2/3, 3/3).
func Parse(s string) (Spec, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("%q is not a shard: write I/N, e.g. 1/3 (shards count from 1)", s)
	}
	return Spec{Index: i, Count: n}.check()
}

func (s Spec) check() (Spec, error) {
	switch {
	case s.Count < 1 || s.Count > MaxShards:
		return Spec{}, fmt.Errorf("shard count %d: must be 1 to %d", s.Count, MaxShards)
	case s.Index < 1 || s.Index > s.Count:
		return Spec{}, fmt.Errorf("shard %d/%d: the index must be 1 to %d (shards count from 1)", s.Index, s.Count, s.Count)
	}
	return s, nil
}

// Environment variables --shard-from-env reads.
const (
	// EnvIndex is the 1-based shard index, for CI matrices (KALAB_SHARD_INDEX=2).
	EnvIndex = "KALAB_SHARD_INDEX"
	// EnvCount is the number of shards (KALAB_SHARD_COUNT=7); always required.
	EnvCount = "KALAB_SHARD_COUNT"
	// EnvJobIndex is set by Kubernetes on the pods of an Indexed Job: 0-based.
	EnvJobIndex = "JOB_COMPLETION_INDEX"
)

// FromEnv reads the shard from the environment: the count from KALAB_SHARD_COUNT, the index
// from KALAB_SHARD_INDEX (1-based) or else JOB_COMPLETION_INDEX (0-based, as Kubernetes
// numbers an Indexed Job's pods). getenv is os.Getenv in the CLI.
func FromEnv(getenv func(string) string) (Spec, error) {
	count := getenv(EnvCount)
	if count == "" {
		return Spec{}, fmt.Errorf("%s is not set (the number of shards)", EnvCount)
	}
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil {
		return Spec{}, fmt.Errorf("%s=%q is not a number", EnvCount, count)
	}
	idx, job := getenv(EnvIndex), getenv(EnvJobIndex)
	var i int
	switch {
	case idx != "":
		if i, err = strconv.Atoi(strings.TrimSpace(idx)); err != nil {
			return Spec{}, fmt.Errorf("%s=%q is not a number", EnvIndex, idx)
		}
		if job != "" {
			j, err := strconv.Atoi(strings.TrimSpace(job))
			if err != nil || j+1 != i {
				return Spec{}, fmt.Errorf("%s=%s and %s=%s name different shards (the first counts from 1, the second from 0)", EnvIndex, idx, EnvJobIndex, job)
			}
		}
	case job != "":
		j, err := strconv.Atoi(strings.TrimSpace(job))
		if err != nil {
			return Spec{}, fmt.Errorf("%s=%q is not a number", EnvJobIndex, job)
		}
		i = j + 1
	default:
		return Spec{}, fmt.Errorf("neither %s (1-based) nor %s (0-based, Kubernetes Indexed Jobs) is set", EnvIndex, EnvJobIndex)
	}
	return Spec{Index: i, Count: n}.check()
}

// Run is one run of the plan and where the split put it.
type Run struct {
	File       string  `json:"file"`
	Scenario   string  `json:"scenario"`
	Variant    string  `json:"variant"`
	Shard      int     `json:"shard"`       // 1-based
	ExpectedMs float64 `json:"expected_ms"` // the weight it was balanced by
}

// Split is where every run of a plan goes.
type Split struct {
	Count int
	Runs  []Run           // sorted by file, then the file's run order
	Load  []time.Duration // expected time of each shard; Load[0] is shard 1
	// SplitFiles are the files whose runs went to more than one shard: their compare checks
	// are evaluated by kalab merge.
	SplitFiles []string
}

// Spread is (heaviest - lightest) / heaviest over the shards' expected times.
func (s *Split) Spread() float64 {
	lo, hi := slices.Min(s.Load), slices.Max(s.Load)
	if hi <= 0 {
		return 0
	}
	return float64(hi-lo) / float64(hi)
}

// Weight is a run's expected duration.
type Weight func(sc *scenario.Scenario, r *scenario.Run) time.Duration

// Plan splits plan into count shards. Files are sorted by path and each file's runs keep
// their order, so the input order does not matter. Whole files are placed first, heaviest
// first, each on the lightest shard (longest processing time first, ties to the lower file
// path and the lower shard); while the spread is above MaxSpread, the heaviest whole file
// with more than one run is split into its runs and the placement starts again. Weights
// are rounded to milliseconds, so tiny floating-point differences between machines cannot
// change the result.
func Plan(plan *scenario.Plan, count int, weight Weight) *Split {
	s := &Split{Count: count}
	scs := slices.Clone(plan.Scenarios)
	slices.SortStableFunc(scs, func(a, b *scenario.Scenario) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Name, b.Name))
	})
	var units []unit
	for _, sc := range scs {
		u := unit{file: sc.File, whole: true}
		for _, r := range sc.Runs {
			w := weight(sc, r).Round(time.Millisecond)
			u.runs = append(u.runs, len(s.Runs))
			u.w += w
			s.Runs = append(s.Runs, Run{File: sc.File, Scenario: sc.Name, Variant: r.Variant, ExpectedMs: float64(w / time.Millisecond)})
		}
		if len(u.runs) > 0 {
			units = append(units, u)
		}
	}
	for {
		s.place(units)
		if s.Spread() <= MaxSpread {
			break
		}
		var split bool
		if units, split = s.splitHeaviest(units); !split {
			break
		}
	}
	s.SplitFiles = s.splitFiles(scs)
	return s
}

// unit is what Plan places on one shard: a whole file's runs, or one run of a split file.
type unit struct {
	file  string
	runs  []int // indexes into Split.Runs
	w     time.Duration
	whole bool
}

// place puts each unit, heaviest first, on the lightest shard.
func (s *Split) place(units []unit) {
	order := slices.Clone(units)
	slices.SortStableFunc(order, func(a, b unit) int {
		return cmp.Or(cmp.Compare(b.w, a.w), cmp.Compare(a.file, b.file), cmp.Compare(a.runs[0], b.runs[0]))
	})
	s.Load = make([]time.Duration, s.Count)
	for _, u := range order {
		best := 0
		for i := range s.Load {
			if s.Load[i] < s.Load[best] {
				best = i
			}
		}
		s.Load[best] += u.w
		for _, ri := range u.runs {
			s.Runs[ri].Shard = best + 1
		}
	}
}

// splitHeaviest splits the heaviest whole file with more than one run into its runs; false
// when no file is left to split.
func (s *Split) splitHeaviest(units []unit) ([]unit, bool) {
	heaviest := -1
	for i, u := range units {
		if u.whole && len(u.runs) > 1 && (heaviest < 0 || u.w > units[heaviest].w) {
			heaviest = i
		}
	}
	if heaviest < 0 {
		return units, false
	}
	u := units[heaviest]
	parts := make([]unit, len(u.runs))
	for i, ri := range u.runs {
		parts[i] = unit{file: u.file, runs: []int{ri}, w: time.Duration(s.Runs[ri].ExpectedMs) * time.Millisecond}
	}
	return slices.Concat(units[:heaviest], parts, units[heaviest+1:]), true
}

// splitFiles are the files whose runs went to more than one shard, in scenario order.
func (s *Split) splitFiles(scs []*scenario.Scenario) []string {
	shards := map[string]map[int]bool{}
	for _, r := range s.Runs {
		if shards[r.File] == nil {
			shards[r.File] = map[int]bool{}
		}
		shards[r.File][r.Shard] = true
	}
	var out []string
	for _, sc := range scs {
		if len(shards[sc.File]) > 1 && !slices.Contains(out, sc.File) {
			out = append(out, sc.File)
		}
	}
	return out
}

// Select returns the part of plan that shard index (1-based) runs: the same scenarios, each
// with only its runs placed on that shard; scenarios left with no run are dropped.
func (s *Split) Select(plan *scenario.Plan, index int) *scenario.Plan {
	mine := map[[2]string]bool{}
	for _, r := range s.Runs {
		if r.Shard == index {
			mine[[2]string{r.Scenario, r.Variant}] = true
		}
	}
	out := &scenario.Plan{}
	for _, sc := range plan.Scenarios {
		part := *sc
		part.Runs = nil
		for _, r := range sc.Runs {
			if mine[[2]string{sc.Name, r.Variant}] {
				part.Runs = append(part.Runs, r)
			}
		}
		if len(part.Runs) > 0 {
			out.Scenarios = append(out.Scenarios, &part)
		}
	}
	return out
}

// Overrides are the command-line settings that change every run, part of a plan's identity.
type Overrides struct {
	TimeScale float64 // > 0 overrides every file's time_scale
	Seed      *int64
}

// PlanHash identifies a plan: sha256 over every file, scenario, variant, resolved settings
// (with the overrides applied) and check expression, in file-path order. Shards of one plan share it.
func PlanHash(plan *scenario.Plan, o Overrides) string {
	h := sha256.New()
	scs := slices.Clone(plan.Scenarios)
	slices.SortStableFunc(scs, func(a, b *scenario.Scenario) int { return cmp.Compare(a.File, b.File) })
	for _, sc := range scs {
		fmt.Fprintf(h, "file %q scenario %q\n", sc.File, sc.Name)
		for _, r := range sc.Runs {
			st := r.Settings
			if o.TimeScale > 0 {
				st.TimeScale = o.TimeScale
			}
			if o.Seed != nil {
				st.Load.Seed = *o.Seed
			}
			b, err := json.Marshal(st)
			if err != nil {
				b = []byte(err.Error())
			}
			fmt.Fprintf(h, "run %q %s\n", r.Variant, b)
			for _, a := range r.Expect {
				fmt.Fprintf(h, "expect %q\n", a.Source)
			}
		}
		for _, a := range sc.Compare {
			fmt.Fprintf(h, "compare %q\n", a.Source)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
