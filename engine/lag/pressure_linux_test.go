package lag

import (
	"testing"
	"time"
)

func TestParseStall(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"some avg10=0.93 avg60=1.57 avg300=3.18 total=5438859209\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 5438859209 * time.Microsecond, true},
		{"full avg10=0.00 total=7\nsome avg10=1.00 total=12\n", 12 * time.Microsecond, true},
		{"some avg10=0.93\n", 0, false},
		{"some total=-4\n", 0, false},
		{"", 0, false},
	} {
		got, ok := parseStall([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseStall(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
