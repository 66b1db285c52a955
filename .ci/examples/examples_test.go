package examples

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rhysd/actionlint"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	root     = "../.."
	k8sFile  = root + "/examples/kubernetes/indexed-job.yaml"
	ghFile   = root + "/examples/ci/github-actions.yml"
	smallSet = root + "/cmd/kalab/testdata/shards" // a few small scenario files
)

// manifests decodes a multi-document Kubernetes file strictly: an unknown or duplicated
// field in any object is an error, as kubectl apply --validate=strict reports it.
func manifests(data []byte) (pvcs []corev1.PersistentVolumeClaim, jobs []batchv1.Job, err error) {
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, nil, fmt.Errorf("document %d: %v", i+1, err)
		}
		switch head.APIVersion + " " + head.Kind {
		case "v1 PersistentVolumeClaim":
			var p corev1.PersistentVolumeClaim
			if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
				return nil, nil, fmt.Errorf("document %d (%s): %v", i+1, head.Kind, err)
			}
			pvcs = append(pvcs, p)
		case "batch/v1 Job":
			var j batchv1.Job
			if err := yaml.UnmarshalStrict([]byte(doc), &j); err != nil {
				return nil, nil, fmt.Errorf("document %d (%s): %v", i+1, head.Kind, err)
			}
			jobs = append(jobs, j)
		default:
			return nil, nil, fmt.Errorf("document %d: unexpected %s %s", i+1, head.APIVersion, head.Kind)
		}
	}
	return pvcs, jobs, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestStrictDecodingCatchesTypos proves the validator can fail: a misspelt field and a
// value of the wrong type are rejected.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	for _, bad := range []string{
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  completionsMode: Indexed\n",
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  completions: four\n",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: x}\nspec:\n  accessMode: [ReadWriteMany]\n",
	} {
		if _, _, err := manifests([]byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

type k8sExample struct {
	pvc          corev1.PersistentVolumeClaim
	shards, merg batchv1.Job
	count        int
}

func loadK8s(t *testing.T) k8sExample {
	t.Helper()
	data, err := os.ReadFile(k8sFile)
	if err != nil {
		t.Fatal(err)
	}
	pvcs, jobs, err := manifests(data)
	if err != nil {
		t.Fatalf("%s: %v", k8sFile, err)
	}
	if len(pvcs) != 1 || len(jobs) != 2 {
		t.Fatalf("%s: %d claims and %d jobs, want 1 and 2", k8sFile, len(pvcs), len(jobs))
	}
	ex := k8sExample{pvc: pvcs[0], shards: jobs[0], merg: jobs[1]}
	s := ex.shards.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil {
		t.Fatalf("%s: the shard Job is not an Indexed Job with completions", ex.shards.Name)
	}
	ex.count = int(*s.Completions)
	return ex
}

// TestKubernetesManifest checks the objects agree with each other and with kalab's flags.
func TestKubernetesManifest(t *testing.T) {
	ex := loadK8s(t)
	c := ex.shards.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["KALAB_SHARD_COUNT"] != strconv.Itoa(ex.count) {
		t.Errorf("KALAB_SHARD_COUNT=%q, completions %d", env["KALAB_SHARD_COUNT"], ex.count)
	}
	if b := ex.shards.Spec.BackoffLimit; b == nil || *b != 0 {
		t.Errorf("the shard Job retries pods: a retried shard writes its part twice and the merge refuses it")
	}
	if !strings.Contains(strings.Join(c.Command, " "), "--shard-from-env") {
		t.Errorf("the shard pods do not pass --shard-from-env: %q", c.Command)
	}
	for _, j := range []batchv1.Job{ex.shards, ex.merg} {
		pod := j.Spec.Template.Spec
		if pod.Volumes[0].PersistentVolumeClaim == nil || pod.Volumes[0].PersistentVolumeClaim.ClaimName != ex.pvc.Name {
			t.Errorf("%s does not mount the claim %s", j.Name, ex.pvc.Name)
		}
		if pod.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: restartPolicy %q", j.Name, pod.RestartPolicy)
		}
	}
	wait := strings.Join(ex.merg.Spec.Template.Spec.InitContainers[0].Command, " ")
	if !strings.Contains(wait, "-ge "+strconv.Itoa(ex.count)) {
		t.Errorf("the merge Job's wait does not count %d shards: %s", ex.count, wait)
	}
	if !slices.ContainsFunc(ex.pvc.Spec.AccessModes, func(m corev1.PersistentVolumeAccessMode) bool { return m == corev1.ReadWriteMany }) {
		t.Errorf("the claim is not ReadWriteMany; %d pods write it at once", ex.count)
	}
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// buildKalab builds the kalab binary once and returns its directory, for PATH.
func buildKalab(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "kalab-examples-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "kalab"), "./cmd/kalab")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// suite lays out a working directory as the examples expect one: scenarios/ (the small
// set) and results/baseline.jsonl (an unsharded run of it), and returns the unsharded exit
// code, which the merged gate must equal.
func suite(t *testing.T, bin string) (dir string, code int) {
	t.Helper()
	dir = t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "scenarios"), os.DirFS(smallSet)); err != nil {
		t.Fatal(err)
	}
	code, out := sh(t, dir, nil, bin, "kalab run scenarios --no-requests --out base --log-level warn")
	if code != 0 && code != 1 {
		t.Fatalf("unsharded run: exit %d\n%s", code, out)
	}
	if c, out := sh(t, dir, nil, bin, "mkdir -p results && cp base/latest/results.jsonl results/baseline.jsonl"); c != 0 {
		t.Fatal(out)
	}
	return dir, code
}

// sh runs script with sh -c in dir, kalab on PATH, and returns its exit code and output.
func sh(t *testing.T, dir string, env []string, bin, script string) (int, string) {
	t.Helper()
	return run(t, dir, env, bin, "sh", "-c", script)
}

func run(t *testing.T, dir string, env []string, bin string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	if args[0] == "kalab" {
		args[0] = filepath.Join(bin, "kalab") // exec looks it up in this process's PATH
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// TestKubernetesCommands runs the manifest's commands as the pods would, on a small
// scenario set: each shard pod's script with its JOB_COMPLETION_INDEX, the merge Job's
// wait, then its kalab merge; the shared volume is a temporary directory. The merge must
// gate as the unsharded run does.
func TestKubernetesCommands(t *testing.T) {
	ex := loadK8s(t)
	bin := buildKalab(t)
	dir, want := suite(t, bin)
	vol := t.TempDir()
	mount := ex.shards.Spec.Template.Spec.Containers[0].VolumeMounts[0].MountPath
	onVol := func(s string) string { return strings.ReplaceAll(s, mount, vol) }
	c := ex.shards.Spec.Template.Spec.Containers[0]
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	if len(c.Command) != 3 || c.Command[0] != "sh" {
		t.Fatalf("the shard command is not sh -c SCRIPT: %q", c.Command)
	}
	for i := range ex.count {
		code, out := sh(t, dir, append(env, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)), bin, onVol(c.Command[2]))
		if code != 0 {
			t.Fatalf("shard pod %d: exit %d\n%s", i, code, out)
		}
	}
	wait := ex.merg.Spec.Template.Spec.InitContainers[0].Command
	if code, out := run(t, dir, nil, bin, onVolAll(wait, onVol)...); code != 0 {
		t.Fatalf("merge Job's wait: exit %d\n%s", code, out)
	}
	merge := ex.merg.Spec.Template.Spec.Containers[0].Command
	code, out := run(t, dir, nil, bin, onVolAll(merge, onVol)...)
	if code != want {
		t.Errorf("merge Job: exit %d, the unsharded run %d\n%s", code, want, out)
	}
	if !strings.Contains(out, fmt.Sprintf("merged %d shards of %d", ex.count, ex.count)) {
		t.Errorf("merge Job did not merge %d shards:\n%s", ex.count, out)
	}
}

func onVolAll(args []string, f func(string) string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = f(a)
	}
	return out
}

// workflow is the part of a GitHub Actions workflow the checks read.
type workflow struct {
	Jobs map[string]struct {
		Needs    any            `json:"needs"`
		Env      map[string]any `json:"env"`
		Strategy struct {
			Matrix map[string]any `json:"matrix"`
		} `json:"strategy"`
		Steps []struct {
			Uses string         `json:"uses"`
			Run  string         `json:"run"`
			With map[string]any `json:"with"`
		} `json:"steps"`
	} `json:"jobs"`
}

// TestGitHubWorkflowLint runs actionlint (and shellcheck on the run scripts, when it is
// installed) over the workflow.
func TestGitHubWorkflowLint(t *testing.T) {
	opts := &actionlint.LinterOptions{}
	if p, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = p
	} else {
		t.Log("shellcheck not installed: run scripts not checked")
	}
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The sharded example, and the workflow kalab init writes.
	for _, f := range []string{ghFile, root + "/cmd/kalab/initdata/kalab.yml"} {
		out.Reset()
		errs, err := l.LintFile(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) > 0 {
			t.Errorf("actionlint %s: %d problems:\n%s", f, len(errs), out.String())
		}
	}
	// The linter must be able to fail: a job that needs a job that does not exist.
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte("on: push\njobs:\n  a:\n    needs: nope\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo $((\n"), 0o644)
	if errs, _ := l.LintFile(bad, nil); len(errs) == 0 {
		t.Errorf("actionlint accepted a broken workflow")
	}
}

// TestGitHubWorkflowCommands runs the workflow's shard step once per matrix value, moves
// each shard's output as upload-artifact and download-artifact would (the paths it lists,
// into shards/<artifact name>/), and runs the merge step: it must gate as the unsharded run
// does. Each job builds kalab (go run would turn its exit codes 2 and 3 into 1); the test
// puts its own build on PATH instead.
func TestGitHubWorkflowCommands(t *testing.T) {
	data, err := os.ReadFile(ghFile)
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	shardJob, mergeJob := wf.Jobs["shard"], wf.Jobs["merge"]
	values, _ := shardJob.Strategy.Matrix["shard"].([]any)
	count := fmt.Sprint(shardJob.Env["KALAB_SHARD_COUNT"])
	if strconv.Itoa(len(values)) != count {
		t.Fatalf("matrix of %d shards, KALAB_SHARD_COUNT=%s", len(values), count)
	}
	if fmt.Sprint(mergeJob.Needs) != "shard" {
		t.Errorf("the merge job needs %v, want shard", mergeJob.Needs)
	}
	for name, job := range wf.Jobs {
		built := false
		for _, s := range job.Steps {
			if strings.Contains(s.Run, "go run") {
				t.Errorf("job %s: a step uses go run, which reports kalab's exit 2 and 3 as 1:\n%s", name, s.Run)
			}
			built = built || strings.Contains(s.Run, "go build -o") && strings.Contains(s.Run, "./cmd/kalab")
		}
		if !built {
			t.Errorf("job %s does not build kalab", name)
		}
	}
	var shardRun, uploadPath, mergeRun string
	for _, s := range shardJob.Steps {
		switch {
		case strings.Contains(s.Run, "kalab run"):
			shardRun = s.Run
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			uploadPath = fmt.Sprint(s.With["path"])
		}
	}
	for _, s := range mergeJob.Steps {
		if strings.Contains(s.Run, "kalab merge") {
			mergeRun = s.Run
		}
	}
	if shardRun == "" || uploadPath == "" || mergeRun == "" {
		t.Fatalf("the workflow has no shard step, upload path or merge step")
	}
	bin := buildKalab(t)
	dir, want := suite(t, bin)
	for _, v := range values {
		work := t.TempDir() // each matrix job has its own checkout
		os.CopyFS(filepath.Join(work, "scenarios"), os.DirFS(filepath.Join(dir, "scenarios")))
		env := []string{"KALAB_SHARD_INDEX=" + fmt.Sprint(v), "KALAB_SHARD_COUNT=" + count}
		if code, out := sh(t, work, env, bin, shardRun); code != 0 {
			t.Fatalf("shard %v: exit %d\n%s", v, code, out)
		}
		upload(t, work, uploadPath, filepath.Join(dir, "shards", "kalab-shard-"+fmt.Sprint(v)))
	}
	code, out := sh(t, dir, nil, bin, mergeRun)
	if code != want {
		t.Errorf("merge step: exit %d, the unsharded run %d\n%s", code, want, out)
	}
	if !strings.Contains(out, fmt.Sprintf("merged %d shards of %d", len(values), len(values))) {
		t.Errorf("merge step did not merge every shard:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "kalab-junit.xml")); err != nil {
		t.Errorf("merge step wrote no JUnit report: %v", err)
	}
}

// upload copies what upload-artifact's path lines select (one directory, minus the
// entries given with !) to dst, following symbolic links as upload-artifact does.
func upload(t *testing.T, work, paths, dst string) {
	t.Helper()
	var include string
	var exclude []string
	for _, l := range strings.Fields(paths) {
		if rest, ok := strings.CutPrefix(l, "!"); ok {
			exclude = append(exclude, filepath.Clean(rest))
		} else {
			include = filepath.Clean(l)
		}
	}
	src := filepath.Join(work, include)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if slices.Contains(exclude, filepath.Join(include, e.Name())) {
			continue
		}
		from, err := filepath.EvalSymlinks(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(filepath.Join(dst, e.Name()), os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKubernetesTiming plays the two Jobs at once, as a cluster would run them: the 4 shard
// pods' scripts start together and the merge Job's wait starts beside them (its poll
// shortened from 10 s). When the wait lets the merge go, every shard's kalab run must have
// ended: its results.jsonl closed by an invocation record that is no longer "started". The
// same play with the marker written before the run (and the run held back a second) is the
// counter-check: the wait must then let the merge go too early, or this test could not see
// the difference.
func TestKubernetesTiming(t *testing.T) {
	ex := loadK8s(t)
	bin := buildKalab(t)
	script := ex.shards.Spec.Template.Spec.Containers[0].Command[2]
	const run = `kalab run scenarios --allow-exec=bundled --shard-from-env --out "/results/shard-$JOB_COMPLETION_INDEX" || code=$?;`
	i := strings.Index(script, run)
	if i < 0 {
		t.Fatalf("the shard script no longer holds %q:\n%s", run, script)
	}
	rest := script[i+len(run):]
	mark := rest[:strings.Index(rest, ";")+1] // the marker's write: echo ... && mv ...
	// The runs are on the virtual clock and may end within one poll of the wait, so the
	// counter-check holds the run back a second after the early marker: a wait that trusts
	// the marker alone must then end first.
	early := strings.Replace(strings.Replace(script, mark, "", 1), run, mark+" sleep 1; "+run, 1)

	if late := playK8s(t, ex, bin, script); len(late) > 0 {
		t.Errorf("the merge Job's wait ended while shards %v were still running", late)
	}
	if late := playK8s(t, ex, bin, early); len(late) == 0 {
		t.Errorf("with the marker written before the run, the wait still ended after every shard: the test cannot tell")
	}
}

// playK8s runs the shard pods' script (each with its JOB_COMPLETION_INDEX) and the merge
// Job's wait at once, and returns the shards whose run had not ended when the wait did.
func playK8s(t *testing.T, ex k8sExample, bin, shardScript string) (running []int) {
	t.Helper()
	dir, _ := suite(t, bin)
	vol := t.TempDir()
	mount := ex.shards.Spec.Template.Spec.Containers[0].VolumeMounts[0].MountPath
	onVol := func(s string) string { return strings.ReplaceAll(s, mount, vol) }
	var env []string
	for _, e := range ex.shards.Spec.Template.Spec.Containers[0].Env {
		env = append(env, e.Name+"="+e.Value)
	}
	var wg sync.WaitGroup
	for i := range ex.count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh(t, dir, append(env, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)), bin, onVol(shardScript))
		}()
	}
	wait := onVolAll(ex.merg.Spec.Template.Spec.InitContainers[0].Command, onVol)
	wait[len(wait)-1] = strings.ReplaceAll(wait[len(wait)-1], "sleep 10", "sleep 0.1")
	code, out := run(t, dir, nil, bin, wait...)
	for i := range ex.count {
		if !runEnded(filepath.Join(vol, fmt.Sprintf("shard-%d", i))) {
			running = append(running, i)
		}
	}
	wg.Wait()
	if code != 0 {
		t.Fatalf("merge Job's wait: exit %d\n%s", code, out)
	}
	return running
}

// runEnded says whether a shard's results directory holds a results.jsonl whose last
// invocation record says the run is over.
func runEnded(shardDir string) bool {
	files, _ := filepath.Glob(filepath.Join(shardDir, "*", "results.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		last := lines[len(lines)-1]
		if strings.Contains(last, `"record":"invocation"`) && !strings.Contains(last, `"state":"started"`) {
			return true
		}
	}
	return false
}

// TestCompositeActionLint lints action.yml with actionlint. actionlint reads workflows, not
// action metadata, so the action's steps go into a reusable workflow whose inputs are the
// action's (the same inputs context); each run script goes through shellcheck when it is
// installed. The runs must be a composite whose every run step names its shell.
func TestCompositeActionLint(t *testing.T) {
	data, err := os.ReadFile(root + "/action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Name   string                    `json:"name"`
		Inputs map[string]map[string]any `json:"inputs"`
		Runs   struct {
			Using string           `json:"using"`
			Steps []map[string]any `json:"steps"`
		} `json:"runs"`
	}
	if err := yaml.Unmarshal(data, &action); err != nil {
		t.Fatal(err)
	}
	if action.Runs.Using != "composite" || len(action.Runs.Steps) == 0 {
		t.Fatalf("action.yml: runs.using %q with %d steps; want a composite", action.Runs.Using, len(action.Runs.Steps))
	}
	inputs := map[string]any{}
	for name, in := range action.Inputs {
		inputs[name] = map[string]any{"type": "string", "default": in["default"], "description": in["description"]}
	}
	for i, s := range action.Runs.Steps {
		if _, ok := s["run"]; ok && s["shell"] == nil {
			t.Errorf("action.yml: step %d runs a script without a shell", i+1)
		}
	}
	wf := map[string]any{
		"on":   map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"jobs": map[string]any{"action": map[string]any{"runs-on": "ubuntu-24.04", "steps": action.Runs.Steps}},
	}
	b, err := yaml.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	// github.action_path is set for an action's steps only; a workflow sees the workspace.
	b = []byte(strings.ReplaceAll(string(b), "github.action_path", "github.workspace"))
	path := filepath.Join(t.TempDir(), "action-as-workflow.yml")
	os.WriteFile(path, b, 0o644)
	opts := &actionlint.LinterOptions{}
	if p, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = p
	}
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Errorf("actionlint on action.yml's steps: %d problems:\n%s\n%s", len(errs), out.String(), b)
	}
}
