package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestBashCompletion sources `kalab completion bash` in a real bash and asks it what it
// completes, as bash does on TAB: COMP_WORDS and COMP_CWORD set, the function called.
func TestBashCompletion(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("bash completion is for Unix shells")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash not on PATH: %v", err)
	}
	var script strings.Builder
	if code := Main([]string{"completion", "bash"}, &script, os.Stderr); code != exitOK {
		t.Fatalf("kalab completion bash: exit %d", code)
	}
	path := filepath.Join(t.TempDir(), "kalab.bash")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		t.Helper()
		// COMP_WORDS as bash splits the line; the cursor on the last word.
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shq(w)
		}
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c",
			`source "$1" && COMP_WORDS=(`+strings.Join(quoted, " ")+`) && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _kalab && printf '%s\n' "${COMPREPLY[@]}"`,
			"bash", path)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{"kalab", "r"}, []string{"report", "run"}},
		{[]string{"kalab", "comp"}, []string{"completion"}},
		{[]string{"kalab", "run", "--par"}, []string{"--parallel"}},
		{[]string{"kalab", "run", "--time-sc"}, []string{"--time-scale"}},
		{[]string{"kalab", "validate", "--q"}, []string{"--quiet"}},
		{[]string{"kalab", "run", "--log-level", "w"}, []string{"warn"}},
		{[]string{"kalab", "help", "me"}, []string{"merge", "metrics"}},
		{[]string{"kalab", "completion", "f"}, []string{"fish"}},
		// --flag=value: bash splits the line at '=' (COMP_WORDBREAKS).
		{[]string{"kalab", "run", "--allow-exec", "=", ""}, []string{"all", "bundled", "none"}},
		{[]string{"kalab", "run", "--allow-exec", "=", "b"}, []string{"bundled"}},
		{[]string{"kalab", "run", "--clock", "v"}, []string{"virtual"}},
	} {
		got := complete(c.words...)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: completions %q, want %q", strings.Join(c.words, " "), got, c.want)
		}
	}
}

// TestBashCompletionNoFilenamesForCommands: the completion spec does not treat every word
// as a file name (-o filenames), which made "kalab sch<TAB>" read "schema/" in a directory
// holding a schema directory; file completions set it themselves.
func TestBashCompletionNoFilenamesForCommands(t *testing.T) {
	var script strings.Builder
	if code := Main([]string{"completion", "bash"}, &script, os.Stderr); code != exitOK {
		t.Fatalf("kalab completion bash: exit %d", code)
	}
	last := strings.TrimSpace(script.String())
	last = last[strings.LastIndex(last, "\n")+1:]
	if last != "complete -o bashdefault -F _kalab kalab" || strings.Count(script.String(), "compopt -o filenames") != 2 {
		t.Errorf("the spec is %q and the script sets filenames %d times; want the spec without -o filenames and it set where files are completed", last, strings.Count(script.String(), "compopt -o filenames"))
	}
}

// The zsh and fish scripts name every command and a command's flags; each is checked by its
// shell's parser when the shell is installed.
func TestOtherShellCompletions(t *testing.T) {
	for _, sh := range []string{"zsh", "fish"} {
		var out strings.Builder
		if code := Main([]string{"completion", sh}, &out, os.Stderr); code != exitOK {
			t.Fatalf("kalab completion %s: exit %d", sh, code)
		}
		for _, want := range []string{"run", "validate", "completion", "parallel", "time-scale"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s script lacks %q", sh, want)
			}
		}
		if bin, err := exec.LookPath(sh); err == nil {
			cmd := exec.Command(bin, "-n")
			cmd.Stdin = strings.NewReader(out.String())
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", sh, err, b)
			}
		}
	}
	var errb strings.Builder
	if code := Main([]string{"completion", "tcsh"}, &strings.Builder{}, &errb); code != exitInvalid {
		t.Errorf("kalab completion tcsh: exit %d, want %d", code, exitInvalid)
	}
}

// shq quotes s as the scripts do: single quotes, a quote inside as '\”.
func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
