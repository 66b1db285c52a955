package load

import (
	"testing"
	"time"
)

// FuzzSchedule feeds arbitrary specs to Validate, Pauses and Arrivals: none may
// panic, and a valid spec's schedule must respect its own bounds.
func FuzzSchedule(f *testing.F) {
	f.Add(1000, 1, 10, int64(1500e6), int64(2500e6), 0.0, false, int64(7))
	f.Add(50, 10, 0, int64(0), int64(0), 0.0, false, int64(0))
	f.Add(30, 0, 7, int64(5), int64(5), 100.0, true, int64(-3))
	f.Add(-1, -1, -1, int64(-1), int64(-2), -1.0, true, int64(1))
	f.Fuzz(func(t *testing.T, req, conc, burst int, pmin, pmax int64, rate float64, poisson bool, seed int64) {
		s := Spec{Requests: req % 5000, Concurrency: conc, Burst: burst,
			PauseMin: time.Duration(pmin), PauseMax: time.Duration(pmax), Rate: rate, Poisson: poisson, Seed: seed}
		if s.Validate() != nil {
			if Pauses(s) != nil || Arrivals(s) != nil {
				t.Fatal("invalid spec produced a schedule")
			}
			return
		}
		p := Pauses(s)
		if want := s.bursts() - 1; len(p) != want {
			t.Fatalf("%d pauses, want %d", len(p), want)
		}
		for _, d := range p {
			if d < s.PauseMin || d > s.PauseMax {
				t.Fatalf("pause %v outside [%v, %v]", d, s.PauseMin, s.PauseMax)
			}
		}
		a := Arrivals(s)
		if s.Rate == 0 {
			if a != nil {
				t.Fatal("closed model has arrivals")
			}
			return
		}
		if len(a) != s.Requests {
			t.Fatalf("%d arrivals, want %d", len(a), s.Requests)
		}
		for i, d := range a {
			if d < 0 || (i%s.BurstSize() != 0 && d < a[i-1]) {
				t.Fatalf("arrival %d at %v after %v", i, d, a[max(i-1, 0)])
			}
		}
	})
}
