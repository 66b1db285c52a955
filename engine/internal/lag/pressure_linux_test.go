package lag

import (
	"testing"
	"time"
)

// parseCase is one input of a /proc parser that reads a duration, and what it must give.
type parseCase struct {
	in   string
	want time.Duration
	ok   bool
}

// checkParser runs a /proc parser over its cases.
func checkParser(t *testing.T, name string, parse func([]byte) (time.Duration, bool), cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		got, ok := parse([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s(%q) = %v, %v; want %v, %v", name, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseStall(t *testing.T) {
	checkParser(t, "parseStall", parseStall, []parseCase{
		{"some avg10=0.93 avg60=1.57 avg300=3.18 total=5438859209\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 5438859209 * time.Microsecond, true},
		{"full avg10=0.00 total=7\nsome avg10=1.00 total=12\n", 12 * time.Microsecond, true},
		{"some avg10=0.93\n", 0, false},
		{"some total=-4\n", 0, false},
		{"", 0, false},
	})
}
