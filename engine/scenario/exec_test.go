package scenario

import (
	"path/filepath"
	"reflect"
	"testing"
)

// client.exec: an adapter by name or a command; the fields the file set (not the
// defaults, not a preset's) are listed for the plan; a matrix can vary the program.
func TestExecLoads(t *testing.T) {
	t.Parallel()
	s, ds := Parse("dir/x.yaml", []byte(`
name: exec
server: {tls: true}
client: {preset: node-agent, timeout: 5s, retry: {attempts: 0}}
load: {requests: 5}
matrix:
  client.exec: [node-agent, node-fetch]
variants:
  - name: mine
    client: {exec: {command: [./my-client, --fast]}, max_conns: 4}
`))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	var names []string
	for _, r := range s.Runs {
		names = append(names, r.Variant)
	}
	// The matrix value wins over the variant's exec (matrix is the top layer).
	want := []string{"mine,exec=node-agent", "mine,exec=node-fetch"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("runs %v, want %v", names, want)
	}
	e := s.Runs[1].Settings.Client.Exec
	if e == nil || e.Adapter != "node-fetch" || len(e.Command) != 0 {
		t.Fatalf("exec %+v", e)
	}
	if want := []string{"max_conns", "preset", "retry.attempts", "timeout"}; !reflect.DeepEqual(e.Fields, want) {
		t.Errorf("fields %v, want %v", e.Fields, want)
	}
	if abs, _ := filepath.Abs("dir"); e.Dir != abs {
		t.Errorf("dir %q, want %q", e.Dir, abs)
	}
	key, canon, v, ok := s.Runs[1].Settings.Client.ClientField("timeout")
	if key != "timeout_ms" || canon != "5s" || v != 5000.0 || !ok {
		t.Errorf("ClientField(timeout) = %q %q %v %v", key, canon, v, ok)
	}

	s, ds = Parse("x.yaml", []byte("name: cmd\nclient: {exec: {command: [./c.sh, a]}}\n"))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	if e := s.Runs[0].Settings.Client.Exec; !reflect.DeepEqual(e.Command, []string{"./c.sh", "a"}) || e.Adapter != "" {
		t.Errorf("exec %+v", e)
	}
}
