package scenario

import "testing"

// client.version picks curl-multi's reuse check by libcurl release: 7.88.0 and 7.88.1 take
// unread input on a pooled connection for a live one (liveness_eof_only), every release
// before and after them does not, and so does no version (the current release). A field
// the file sets itself still wins over the release's.
func TestCurlMultiVersionChoosesTheReuseCheck(t *testing.T) {
	t.Parallel()
	s := parseOK(t, `
name: v
client: {preset: curl-multi}
variants:
  - {name: none}
  - {name: "7.87.0", client: {version: 7.87.0}}
  - {name: "7.88.0", client: {version: 7.88.0}}
  - {name: "7.88.1", client: {version: 7.88.1}}
  - {name: "8.0.0", client: {version: 8.0.0}}
  - {name: "8.14.1", client: {version: 8.14.1}}
  - {name: "8.14.1-own", client: {version: 8.14.1, liveness_eof_only: true}}
  - {name: "7.88.1-own", client: {version: 7.88.1, liveness_eof_only: false}}
`)
	want := map[string]bool{"none": false, "7.87.0": false, "7.88.0": true, "7.88.1": true, "8.0.0": false,
		"8.14.1": false, "8.14.1-own": true, "7.88.1-own": false}
	for _, r := range s.Runs {
		c := r.Settings.Client
		if c.LivenessEOFOnly != want[r.Variant] {
			t.Errorf("%s: liveness_eof_only %v, want %v", r.Variant, c.LivenessEOFOnly, want[r.Variant])
		}
		if !c.LivenessCheck || c.Retry.Attempts != 5 {
			t.Errorf("%s: the rest of the preset is gone: %+v", r.Variant, c)
		}
	}
}
