package scenario

import (
	"strings"
	"testing"
)

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

// client.version picks the undici preset's Agent by release: 7.x (and no version, the
// default, as Node 24 LTS bundles undici 7) closes the origin's Pool when its count of
// connections falls to zero (drop_empty_pool), 6.x does not; the rest of the preset stays.
func TestUndiciVersionChoosesTheAgent(t *testing.T) {
	t.Parallel()
	s := parseOK(t, `
name: v
client: {preset: undici}
variants:
  - {name: none}
  - {name: "6.14.1", client: {version: 6.14.1}}
  - {name: "6.24.1", client: {version: 6.24.1}}
  - {name: "7.15.0", client: {version: 7.15.0}}
  - {name: "7.30.3", client: {version: 7.30.3}}
  - {name: "6.24.1-own", client: {version: 6.24.1, drop_empty_pool: true}}
`)
	want := map[string]bool{"none": true, "6.14.1": false, "6.24.1": false, "7.15.0": true, "7.30.3": true, "6.24.1-own": true}
	for _, r := range s.Runs {
		c := r.Settings.Client
		if c.DropEmptyPool != want[r.Variant] {
			t.Errorf("%s: drop_empty_pool %v, want %v", r.Variant, c.DropEmptyPool, want[r.Variant])
		}
		if c.Scheduling != "creation-order" || c.HintBuffer.String() != "2s" {
			t.Errorf("%s: the rest of the preset is gone: %+v", r.Variant, c)
		}
	}
}

// A release outside every range a preset models is refused at its line and column, not
// given the default's rule: curl 9.99, undici 9.99, undici 7.10.0 (its Agent destroyed the
// Pool instead of closing it), undici 8 (another Agent rule) and undici 6.0.0 (before the
// 2 s hint threshold).
func TestVersionOutsideTheModelledRangesIsRefused(t *testing.T) {
	t.Parallel()
	const undici = "6.14.1 up to (not including) 7.0.0, 7.15.0 up to (not including) 8.0.0"
	for _, tc := range []struct{ preset, version, models string }{
		{"curl-multi", "9.99", "7.65.0 up to (not including) 9.0.0"},
		{"undici", "9.99", undici},
		{"undici", "7.10.0", undici},
		{"undici", "8.0.2", undici},
		{"undici", "6.0.0", undici},
	} {
		src := "name: v\nload: {requests: 1}\nclient:\n  preset: " + tc.preset + "\n  version: \"" + tc.version + "\"\n"
		want := "t.yaml:5:12: client.version: " + tc.version + " is not a release the " + tc.preset + " preset models: it models " + tc.models
		_, ds := Parse("t.yaml", []byte(src))
		if err := ds.Error(); len(ds) != 1 || !strings.Contains(err, want) {
			t.Errorf("%s %s: %q, want it to contain %q", tc.preset, tc.version, err, want)
		}
	}
}
