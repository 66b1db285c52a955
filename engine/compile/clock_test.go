package compile

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestChooseClock: unset goes virtual when every part is modelled and the process has a
// host; a real program or a missing host keeps it real with the reason; --clock overrides
// where the run can follow it; a file that asks for virtual and cannot have it is refused.
func TestChooseClock(t *testing.T) {
	model := scenario.Settings{}
	exec := scenario.Settings{Client: scenario.Client{Exec: &scenario.Exec{Adapter: "curl"}}}
	cases := []struct {
		name            string
		st              scenario.Settings
		flag, file      string
		host            bool
		want, refused   string
		offModelMention string
	}{
		{name: "model, unset", st: model, host: true, want: "virtual"},
		{name: "model, no host", st: model, want: "real"},
		{name: "model, file real", st: model, file: "real", host: true, want: "real"},
		{name: "model, flag real over file virtual", st: model, file: "virtual", flag: "real", host: true, want: "real"},
		{name: "exec, unset", st: exec, host: true, want: "real", offModelMention: "client.exec"},
		{name: "exec, flag virtual", st: exec, flag: "virtual", host: true, want: "real", offModelMention: "client.exec"},
		{name: "exec, file virtual", st: exec, file: "virtual", host: true, want: "real", refused: "client.exec runs a real program"},
		{name: "model, file virtual, no host", st: model, file: "virtual", want: "real", refused: "no virtual clock"},
	}
	for _, c := range cases {
		st := c.st
		st.Clock = c.file
		got := chooseClock(st, Options{Clock: c.flag, Virtual: c.host})
		if got.clock != c.want {
			t.Errorf("%s: clock %s, want %s", c.name, got.clock, c.want)
		}
		if (c.refused == "") != (got.refused == "") || !strings.Contains(got.refused, c.refused) {
			t.Errorf("%s: refused %q, want one naming %q", c.name, got.refused, c.refused)
		}
		if c.offModelMention != "" && !strings.Contains(got.note(1), c.offModelMention) {
			t.Errorf("%s: note %q does not name %s", c.name, got.note(1), c.offModelMention)
		}
	}
	if n := (clockChoice{clock: "virtual"}).note(0.1); !strings.Contains(n, "time_scale 0.1 not applied") {
		t.Errorf("a virtual run of a time-scaled file: note %q", n)
	}
}
