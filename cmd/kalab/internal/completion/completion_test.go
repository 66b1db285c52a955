package completion

import (
	"os/exec"
	"strings"
	"testing"
)

var cmds = []Command{
	{Name: "run", About: "run files", Flags: []Flag{
		{Name: "clock", About: "which clock", TakesValue: true},
		{Name: "out", About: "where: it's a dir", TakesValue: true},
		{Name: "all", Short: "a", About: "every run"},
	}},
	{Name: "completion", About: "a script", Args: []string{"bash", "zsh", "fish"}, NoFiles: true},
	{Name: "version", About: "the version", NoFiles: true},
}

var values = map[string][]string{"clock": {"real", "virtual"}}

func TestWriteRefusesAnUnknownShell(t *testing.T) {
	var b strings.Builder
	if Write(&b, "pwsh", cmds, values) || b.Len() != 0 {
		t.Fatalf("pwsh: wrote %q", b.String())
	}
}

// The fish script as fish reads it: one line per subcommand, flag and argument list, a
// flag's fixed values after -a, files (-F) where a flag takes a path, quotes escaped.
func TestFishLines(t *testing.T) {
	var b strings.Builder
	if !Write(&b, "fish", cmds, values) {
		t.Fatal("fish: not written")
	}
	for _, want := range []string{
		"complete -c kalab -f",
		"complete -c kalab -n '__fish_use_subcommand' -a run -d 'run files'",
		"complete -c kalab -n '__fish_seen_subcommand_from run' -l clock -r -a 'real virtual' -d 'which clock'",
		`complete -c kalab -n '__fish_seen_subcommand_from run' -l out -r -F -d 'where: it'\''s a dir'`,
		"complete -c kalab -n '__fish_seen_subcommand_from run' -l all -s a -d 'every run'",
		"complete -c kalab -n '__fish_seen_subcommand_from run' -F",
		"complete -c kalab -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'",
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("no line %s", want)
		}
	}
	if strings.Contains(b.String(), "'__fish_seen_subcommand_from version' -F") {
		t.Error("version takes no files, but completes them")
	}
}

// What bash offers at a cursor, asked of the script itself in a real bash.
func TestBashOffers(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	var b strings.Builder
	Write(&b, "bash", cmds, values)
	for _, c := range []struct{ words, want string }{
		{`kalab ""`, "run completion version --help --version"},
		{`kalab r`, "run"},
		{`kalab run --clock ""`, "real virtual"},
		{`kalab run --clock = ""`, "real virtual"}, // bash splits --clock= at the =
		{`kalab completion z`, "zsh"},
	} {
		script := b.String() + "\nCOMP_WORDS=(" + c.words + "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _kalab; echo \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.words, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%s: offers %q, want %q", c.words, got, c.want)
		}
	}
}
