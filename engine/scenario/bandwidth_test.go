package scenario

import "testing"

func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]Bandwidth{
		"10Mbit": 10_000_000, "1Gbit": 1_000_000_000, "512kbit": 512_000, "2.5Mbit": 2_500_000,
		"none": 0, "0": 0, "1500bit": 1500,
	} {
		got, err := parseBandwidth(in)
		if err != nil || got != want {
			t.Errorf("parseBandwidth(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"fast", "10MB", "-1Mbit", "10 mbit", "10bit", "2000Gbit"} {
		if got, err := parseBandwidth(in); err == nil {
			t.Errorf("parseBandwidth(%q) = %d; want an error", in, got)
		}
	}
	if s := Bandwidth(10_000_000).String(); s != "10Mbit" {
		t.Errorf("String = %q", s)
	}
}
