package topology

import "testing"

// failed_bursts and its mask, hand-computed: failures at requests 3, 12, 14 and 27 with
// bursts of 10 are in bursts 0, 1 and 2 (mask 1+2+4 = 7); request 600 is in burst 60,
// counted but past the mask's 53 bits; with no bursts everything is burst 0.
func TestFailedBursts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size          int
		seqs          []int
		wantN, wantMk float64
	}{
		{10, []int{3, 12, 14, 27}, 3, 7},
		{10, []int{3, 600}, 2, 1},
		{10, []int{520}, 1, 1 << 52},
		{0, []int{5, 99}, 1, 1},
		{10, nil, 0, 0},
	} {
		rc := &recorder{failed: map[int]bool{}}
		for _, s := range tc.seqs {
			rc.failed[burstOf(s, tc.size)] = true
		}
		if n, mask := rc.failedBursts(); n != tc.wantN || mask != tc.wantMk {
			t.Errorf("burst %d, failures %v: failed_bursts %v mask %v, want %v and %v", tc.size, tc.seqs, n, mask, tc.wantN, tc.wantMk)
		}
	}
}
