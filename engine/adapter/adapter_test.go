package adapter

import (
	"slices"
	"strings"
	"testing"
)

func TestCatalogue(t *testing.T) {
	names := Names()
	if len(names) < 7 || !slices.IsSorted(names) {
		t.Fatalf("Names() = %v: want the bundled adapters, sorted", names)
	}
	for _, n := range names {
		a, ok := Lookup(n)
		if !ok || a.Name != n {
			t.Fatalf("Lookup(%q) = %+v, %v", n, a, ok)
		}
		if a.Native == (a.Script != "") {
			t.Errorf("%s: native %v with script %q: a native adapter has no script, any other has one", n, a.Native, a.Script)
		}
		if a.Runtime == "" || a.Models == "" {
			t.Errorf("%s: no runtime or no description", n)
		}
		for f, v := range a.Fixed {
			if _, knob := a.Knobs[f]; knob {
				t.Errorf("%s: %s is both a knob and fixed at %s", n, f, v.Value)
			}
		}
	}
	if _, ok := Lookup("no-such"); ok {
		t.Error("Lookup of an unknown adapter succeeded")
	}
}

func TestRefuse(t *testing.T) {
	a, _ := Lookup("node-agent")
	for _, c := range []struct{ field, value, want string }{
		{"method", "POST", ""},       // the request itself goes to every adapter
		{"preset", "node-agent", ""}, // describes kalab's own clients: ignored
		{"idle_timeout", "5s", ""},   // a knob
		{"retry.attempts", "0", ""},  // fixed, at its value
		{"retry.attempts", "2", "cannot set it to 2: Node's http client never re-sends a request (it can only be 0)"},
		{"no_such_field", "1", "has no setting for it (it honours idle_timeout, keepalive, max_conns, max_idle, scheduling, session_resumption, timeout)"},
	} {
		got := a.Refuse(c.field, c.value)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Refuse(%s, %s) = %q, want %q", c.field, c.value, got, c.want)
		}
	}
}

func TestRefuseVersion(t *testing.T) {
	for _, c := range []struct {
		adapter, version string
		ok               bool
	}{
		{"go-http", "go1.22.12", true},
		{"go-http", "1.22", false},
		{"go-http", "go1.20.1", false}, // the adapter needs Go 1.21's toolchain switching
		{"libcurl", "8.14.1", true},
		{"libcurl", "8.14", false},
		{"node-agent", "20.0.0", false}, // runs its runtime's own version only
	} {
		a, ok := Lookup(c.adapter)
		if !ok {
			t.Fatalf("no adapter %s", c.adapter)
		}
		if got := a.RefuseVersion(c.version); (got == "") != c.ok {
			t.Errorf("%s version %s: %q, want accepted %v", c.adapter, c.version, got, c.ok)
		}
	}
}
