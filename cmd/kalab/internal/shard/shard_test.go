package shard

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/scenario"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Spec
		err  bool
	}{
		{"1/3", Spec{1, 3}, false},
		{" 3/3 ", Spec{3, 3}, false},
		{"1/1", Spec{1, 1}, false},
		{"0/3", Spec{}, true}, // shards count from 1
		{"4/3", Spec{}, true},
		{"1/0", Spec{}, true},
		{"2", Spec{}, true},
		{"a/b", Spec{}, true},
		{"1/1001", Spec{}, true},
	} {
		got, err := Parse(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Spec
		err  bool
	}{
		{map[string]string{EnvCount: "7", EnvIndex: "7"}, Spec{7, 7}, false},
		{map[string]string{EnvCount: "7", EnvJobIndex: "0"}, Spec{1, 7}, false}, // Kubernetes counts from 0
		{map[string]string{EnvCount: "7", EnvJobIndex: "6"}, Spec{7, 7}, false},
		{map[string]string{EnvCount: "7", EnvJobIndex: "7"}, Spec{}, true},
		{map[string]string{EnvCount: "3", EnvIndex: "2", EnvJobIndex: "1"}, Spec{2, 3}, false},
		{map[string]string{EnvCount: "3", EnvIndex: "2", EnvJobIndex: "2"}, Spec{}, true},
		{map[string]string{EnvIndex: "1"}, Spec{}, true},
		{map[string]string{EnvCount: "3"}, Spec{}, true},
		{map[string]string{EnvCount: "x", EnvIndex: "1"}, Spec{}, true},
	} {
		got, err := FromEnv(func(k string) string { return c.env[k] })
		if (err != nil) != c.err || got != c.want {
			t.Errorf("FromEnv(%v) = %v, %v; want %v, error %v", c.env, got, err, c.want, c.err)
		}
	}
}

// synthetic builds a plan of files with the given run weights (milliseconds).
func synthetic(files map[string][]int) (*scenario.Plan, Weight) {
	plan := &scenario.Plan{}
	w := map[[2]string]time.Duration{}
	for f, runs := range files {
		sc := &scenario.Scenario{Name: "s-" + f, File: f}
		for i, ms := range runs {
			r := &scenario.Run{Scenario: sc.Name, Variant: fmt.Sprintf("v%d", i)}
			sc.Runs = append(sc.Runs, r)
			w[[2]string{sc.Name, r.Variant}] = time.Duration(ms) * time.Millisecond
		}
		plan.Scenarios = append(plan.Scenarios, sc)
	}
	return plan, func(sc *scenario.Scenario, r *scenario.Run) time.Duration { return w[[2]string{sc.Name, r.Variant}] }
}

// exactlyOnce checks that the shards' selections cover every run of plan once.
func exactlyOnce(t *testing.T, plan *scenario.Plan, s *Split) {
	t.Helper()
	seen := map[string]int{}
	for i := 1; i <= s.Count; i++ {
		for _, sc := range s.Select(plan, i).Scenarios {
			for _, r := range sc.Runs {
				seen[sc.Name+"/"+r.Variant]++
			}
		}
	}
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			if n := seen[sc.Name+"/"+r.Variant]; n != 1 {
				t.Errorf("%s/%s runs in %d shards", sc.Name, r.Variant, n)
			}
		}
	}
	if len(seen) != plan.Runs() {
		t.Errorf("the shards run %d distinct runs, the plan has %d", len(seen), plan.Runs())
	}
}

func TestPlanKeepsFilesWholeWhenBalanced(t *testing.T) {
	plan, w := synthetic(map[string][]int{"a": {50, 50}, "b": {100}, "c": {60, 40}, "d": {30, 30, 30}})
	s := Plan(plan, 2, w)
	exactlyOnce(t, plan, s)
	if len(s.SplitFiles) != 0 {
		t.Errorf("split %v although whole files balance (loads %v)", s.SplitFiles, s.Load)
	}
	// LPT: b(100) and a(100) or c(100) first, then d(90): 190 vs 200.
	if s.Spread() > MaxSpread {
		t.Errorf("spread %.2f", s.Spread())
	}
}

func TestPlanSplitsAFileThatDominates(t *testing.T) {
	plan, w := synthetic(map[string][]int{"big": {40, 40, 40, 40, 40}, "x": {30}, "y": {20}, "z": {10}})
	s := Plan(plan, 3, w)
	exactlyOnce(t, plan, s)
	if !slices.Equal(s.SplitFiles, []string{"big"}) {
		t.Errorf("split files %v, want [big] (loads %v)", s.SplitFiles, s.Load)
	}
	if s.Spread() > MaxSpread {
		t.Errorf("spread %.2f (loads %v)", s.Spread(), s.Load)
	}
	// The split of a file that did not need it stays whole.
	for _, r := range s.Runs {
		if r.File != "big" && r.Shard == 0 {
			t.Errorf("%s not placed", r.Variant)
		}
	}
}

func TestPlanMoreShardsThanRuns(t *testing.T) {
	plan, w := synthetic(map[string][]int{"a": {10, 10}, "b": {5}})
	s := Plan(plan, 5, w)
	exactlyOnce(t, plan, s)
	empty := 0
	for i := 1; i <= 5; i++ {
		if len(s.Select(plan, i).Scenarios) == 0 {
			empty++
		}
	}
	if empty != 2 {
		t.Errorf("%d empty shards, want 2 (3 runs in 5 shards)", empty)
	}
}

// TestPlanIgnoresInputOrder: the same files in any order give the same split.
func TestPlanIgnoresInputOrder(t *testing.T) {
	plan, w := synthetic(map[string][]int{"a": {70, 10}, "b": {55}, "c": {33, 33, 33}, "d": {90, 5}, "e": {12}, "f": {44, 44}})
	want := Plan(plan, 3, w)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := &scenario.Plan{Scenarios: slices.Clone(plan.Scenarios)}
		rng.Shuffle(len(shuffled.Scenarios), func(i, j int) {
			shuffled.Scenarios[i], shuffled.Scenarios[j] = shuffled.Scenarios[j], shuffled.Scenarios[i]
		})
		if got := Plan(shuffled, 3, w); !reflect.DeepEqual(got, want) {
			t.Fatalf("the split depends on the order of the files:\n%+v\n%+v", got, want)
		}
	}
}

// TestBundledSuite is the acceptance check on the planned durations: the bundled suite in 1,
// 3 and 7 shards puts every run in exactly one shard, and the shards' expected times are
// within 25% of each other.
func TestBundledSuite(t *testing.T) {
	files, err := scenario.FindFiles([]string{"../../../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	w := func(sc *scenario.Scenario, r *scenario.Run) time.Duration {
		return compile.One(sc, r, compile.Options{}).Expected
	}
	for _, n := range []int{1, 3, 7} {
		s := Plan(plan, n, w)
		exactlyOnce(t, plan, s)
		loads := make([]string, n)
		for i, l := range s.Load {
			loads[i] = l.Round(100 * time.Millisecond).String()
		}
		t.Logf("%d shards: spread %.1f%%, loads %v, split files %v", n, 100*s.Spread(), loads, s.SplitFiles)
		if s.Spread() > 0.25 {
			t.Errorf("%d shards: spread %.1f%% > 25%% (loads %v)", n, 100*s.Spread(), loads)
		}
		if again := Plan(plan, n, w); !reflect.DeepEqual(again, s) {
			t.Errorf("%d shards: two splits of the same plan differ", n)
		}
	}
}
