package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"idle_timeout", "keepalive", "errors", "ok"}
	for in, want := range map[string]string{
		"idle_timout": "idle_timeout", // one letter missing
		"keepalve":    "keepalive",
		"erors":       "errors",
		"foo":         "", // too far from everything, even "ok"
		"zzzzzzzz":    "",
	} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q; want %q", in, got, want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d; want 3", d)
	}
}
