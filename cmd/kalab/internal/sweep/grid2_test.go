package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pool is a fake two-parameter run: safe when the pool (x) holds the concurrency (y).
func pool(_ context.Context, x, y float64, _ int64) (Point, error) {
	conns := y
	if x < y {
		conns = y + 49*(y-x)
	}
	return Point{Pass: x >= y, Metric: conns, HasMetric: true}, nil
}

func TestGrid2(t *testing.T) {
	t.Parallel()
	ax, ay := Axis{Lo: 2, Hi: 10, N: 5, Integer: true}, Axis{Lo: 2, Hi: 10, N: 5, Integer: true}
	m, err := Grid2(context.Background(), ax, ay, []int64{1, 2}, 50, 2, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 50 || len(m.Cells) != 5 {
		t.Fatalf("runs %d, rows %d; want 50 and 5", m.Runs, len(m.Cells))
	}
	for i, row := range m.Cells {
		for _, c := range row {
			want := Unsafe
			if c.Value >= m.Ys[i] {
				want = Safe
			}
			if c.Verdict != want || c.Pass+c.Fail != 2 {
				t.Errorf("x %v, y %v: %s (%d judged); want %s", c.Value, m.Ys[i], c.Verdict, c.Pass+c.Fail, want)
			}
		}
	}
	for i, bs := range m.RowBrackets() {
		if i == 0 {
			if len(bs) != 0 {
				t.Errorf("row y=2 is safe throughout; got %v", bs)
			}
			continue
		}
		if len(bs) != 1 || bs[0].Safe != m.Ys[i] || bs[0].Unsafe != m.Ys[i]-2 {
			t.Errorf("row y=%v: brackets %v; want safe at %v", m.Ys[i], bs, m.Ys[i])
		}
	}
	// The whole map must fit the budget, or nothing runs.
	calls := 0
	counting := func(ctx context.Context, x, y float64, s int64) (Point, error) { calls++; return pool(ctx, x, y, s) }
	if _, err := Grid2(context.Background(), ax, ay, []int64{1, 2}, 49, 2, counting, nil); err == nil || calls != 0 {
		t.Errorf("a map of 50 runs within a budget of 49: err %v, %d calls", err, calls)
	}
}

// The heat map in Chromium: a cell per pair of values, safe green, unsafe red.
func TestHeatMapInChromium(t *testing.T) {
	bin := chromium(t)
	m, err := Grid2(context.Background(), Axis{Lo: 2, Hi: 10, N: 5, Integer: true}, Axis{Lo: 2, Hi: 10, N: 5, Integer: true}, []int64{1}, 25, 2, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &MapRecord{Record: "sweep_map", File: "08-pool-thrash.yaml", Run: "idle-10", Param: "client.max_idle", Param2: "load.concurrency",
		Seeds: []int64{1}, Check: "connections <= 20", Metric: "connections"}
	itoa := func(v float64) string { return num(v) }
	rec.FillMap(m, itoa, itoa)
	page := filepath.Join(t.TempDir(), "map.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := HeatMap(f, rec, itoa, itoa); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	safe, unsafe := strings.Count(dom, `class="cell safe"`), strings.Count(dom, `class="cell unsafe"`)
	if safe != 15 || unsafe != 10 {
		t.Errorf("DOM: %d safe and %d unsafe cells; want 15 and 10 (safe where the pool holds the concurrency)", safe, unsafe)
	}
	if !strings.Contains(dom, "load.concurrency = 10: client.max_idle ≥ 10 safe (8 unsafe)") {
		t.Errorf("the row sentence is missing: %v", rec.Sentences)
	}
	shot := filepath.Join(filepath.Dir(page), "map.png")
	headless(t, bin, "--window-size=640,420", "--screenshot="+shot, "file://"+page)
	counts := colours(t, shot, map[string][3]uint32{"safe": {0x1a, 0x7f, 0x37}, "unsafe": {0xcf, 0x22, 0x2e}})
	t.Logf("screenshot pixels: %v", counts)
	// A cell is 70 × 34 units: 15 safe cells are well over 20,000 pixels, 10 unsafe over 15,000.
	if counts["safe"] < 20000 || counts["unsafe"] < 15000 {
		t.Errorf("screenshot: %v pixels of the safe and unsafe colours; want the cells painted", counts)
	}
}
