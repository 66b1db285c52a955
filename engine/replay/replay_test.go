package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll drains a source.
func readAll(t *testing.T, cfg Config) ([]Request, Summary) {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []Request
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		out = append(out, r)
	}
	return out, s.Summary()
}

func brief(rs []Request) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%d:%s@%v ", r.Line, r.Client, r.At)
	}
	return strings.TrimSpace(b.String())
}

const nginxLog = `10.0.0.1 - - [02/Dec/2026:03:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5" 0.010 1796180400.110
10.0.0.2 - bob [02/Dec/2026:03:00:00 +0000] "GET /a?q=\"x\" HTTP/1.1" 200 - "http://r/" "Mozilla/5.0 (X11)" 1796180400.300 0.100
garbage
10.0.0.1 - - [02/Dec/2026:03:00:01 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5"

10.0.0.1 - - [32/Dec/2026:03:00:01 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5"
10.0.0.3 - - [02/Dec/2026:03:00:02 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5" 1.5
10.0.0.3 - - [02/Dec/2026:03:00:02 +0000] "GET / HTTP/1.1" 2x0 612 "-" "curl/8.5"
10.0.0.3 - - [02/Dec/2026:03:00:02 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5" abc
`

func TestNginx(t *testing.T) {
	t.Parallel()
	got, sum := readAll(t, Config{Path: write(t, "access.log", nginxLog)})
	// Line 1 ends at .110 after 10 ms: starts at .100; line 2 ends at .300 after 100 ms:
	// .200; line 4 has only $time_local (03:00:01); line 7 ends at 03:00:02 after 1.5 s.
	want := "1:10.0.0.1@0s 2:10.0.0.2@100ms 7:10.0.0.3@400ms 4:10.0.0.1@900ms"
	if brief(got) != want {
		t.Errorf("requests:\n got %s\nwant %s", brief(got), want)
	}
	if sum.Format != FormatNginx || sum.Lines != 8 || sum.Requests != 4 || sum.BadLines != 4 {
		t.Errorf("summary %+v", sum)
	}
	var lines []int
	for _, b := range sum.FirstBad {
		lines = append(lines, b.Line)
	}
	if fmt.Sprint(lines) != "[3 6 8 9]" {
		t.Errorf("bad lines %v, want [3 6 8 9] (line 5 is blank)", lines)
	}
	for _, b := range sum.FirstBad {
		if b.Reason == "" {
			t.Errorf("line %d: no reason", b.Line)
		}
	}
}

func TestNginxUserAgent(t *testing.T) {
	t.Parallel()
	got, _ := readAll(t, Config{Path: write(t, "access.log", nginxLog), Key: KeyUserAgent})
	if got[1].Client != "Mozilla/5.0 (X11)" || got[0].Client != "curl/8.5" {
		t.Errorf("clients by user agent: %s", brief(got))
	}
	if _, err := Open(Config{Path: write(t, "a.log", nginxLog), Key: "ip"}); err == nil {
		t.Error("an nginx log grouped by a field name opened")
	}
}

func TestJSONL(t *testing.T) {
	t.Parallel()
	text := `{"ts": "2026-12-02T03:00:00.500Z", "ip": "a"}
{"ts": 1796180400.25, "ip": "b"}
{"ts": 1796180401000, "ip": 7}
{"ts": "yesterday", "ip": "a"}
{"ip": "a"}
{"ts": 1796180401}
[1,2]
{"ts": 1796180401, "ip": {"x": 1}}
`
	got, sum := readAll(t, Config{Path: write(t, "t.jsonl", text), Fields: Fields{Time: "ts", Client: "ip"}})
	if want := "2:b@0s 1:a@250ms 3:7@750ms"; brief(got) != want {
		t.Errorf("got %s, want %s", brief(got), want)
	}
	if sum.BadLines != 5 || sum.FirstBad[0].Line != 4 || sum.FirstBad[4].Line != 8 {
		t.Errorf("summary %+v", sum)
	}
}

const harDoc = `{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"},
 "pages": [{"id": "p1", "title": "t", "startedDateTime": "2026-12-02T03:00:00Z"}],
 "entries": [
  {"pageref": "p1", "startedDateTime": "2026-12-02T03:00:00.100+00:00", "request": {"method": "GET", "url": "https://x/", "headers": [{"name": "user-agent", "value": "ua1"}]}},
  {"pageref": "p2", "startedDateTime": "2026-12-02T03:00:00.000Z", "request": {"method": "GET", "url": "https://x/b", "headers": []}},
  {"pageref": "p1", "startedDateTime": "soon", "request": {"method": "GET", "url": "https://x/"}},
  {"pageref": "p1", "startedDateTime": 5, "request": {"method": "GET", "url": "https://x/"}},
  {"pageref": "p1", "startedDateTime": "2026-12-02T03:00:02Z", "request": {"method": "GET", "url": "https://x/c"}}
 ]}}`

func TestHAR(t *testing.T) {
	t.Parallel()
	got, sum := readAll(t, Config{Path: write(t, "x.har", harDoc)})
	if want := "2:p2@0s 1:p1@100ms 5:p1@2s"; brief(got) != want {
		t.Errorf("got %s, want %s", brief(got), want)
	}
	if sum.BadLines != 2 || sum.FirstBad[0].Line != 3 || sum.FirstBad[1].Line != 4 {
		t.Errorf("summary %+v", sum)
	}
	got, sum = readAll(t, Config{Path: write(t, "x.har", harDoc), Key: KeyUserAgent})
	if brief(got) != "1:ua1@0s" || sum.BadLines != 4 {
		t.Errorf("by user agent: %s, %+v", brief(got), sum)
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{"nginx": nginxLog, "har": harDoc, "jsonl": `{"time": 1, "client": "a"}` + "\n"} {
		_, sum := readAll(t, Config{Path: write(t, "recording", text)})
		if sum.Format != name {
			t.Errorf("%s detected as %s", name, sum.Format)
		}
	}
}

func TestWindowAndSample(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, `{"time": %d, "client": "c%d"}`+"\n", 1796180400+i, i%20)
	}
	p := write(t, "w.jsonl", b.String())
	got, sum := readAll(t, Config{Path: p, From: 10 * time.Second, To: 19 * time.Second})
	if len(got) != 10 || got[0].At != 0 || got[9].At != 9*time.Second || sum.Skipped != 10 {
		t.Errorf("window 10s..19s: %s (%+v)", brief(got), sum)
	}
	got, _ = readAll(t, Config{Path: p, Sample: 0.5, Seed: 3})
	clients := map[string]int{}
	for _, r := range got {
		clients[r.Client]++
	}
	for c, n := range clients {
		if n != 5 {
			t.Errorf("client %s kept %d of its 5 requests: sampling must keep whole clients", c, n)
		}
	}
	if len(clients) < 4 || len(clients) > 16 {
		t.Errorf("sample 0.5 of 20 clients kept %d", len(clients))
	}
}

func TestReorderWindow(t *testing.T) {
	t.Parallel()
	// Written in end order; starts are out of order by up to two lines.
	text := `{"time": 1796180400.3, "client": "a"}
{"time": 1796180400.1, "client": "b"}
{"time": 1796180400.2, "client": "c"}
{"time": 1796180400.0, "client": "d"}
`
	got, sum := readAll(t, Config{Path: write(t, "r.jsonl", text)})
	if want := "4:d@0s 2:b@100ms 3:c@200ms 1:a@300ms"; brief(got) != want || sum.Late != 0 {
		t.Errorf("got %s (late %d), want %s", brief(got), sum.Late, want)
	}
	got, sum = readAll(t, Config{Path: write(t, "r.jsonl", text), Window: 1})
	if sum.Late != 3 || got[0].Client != "a" {
		t.Errorf("window 1: %s, late %d", brief(got), sum.Late)
	}
}

func TestLongLineAndMaxBad(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("x", maxLine+10) + "\n" + strings.Repeat("bad\n", 30) + `{"time": 1, "client": "a"}` + "\n"
	got, sum := readAll(t, Config{Path: write(t, "l.jsonl", text)})
	if len(got) != 1 || got[0].Line != 32 || sum.BadLines != 31 || len(sum.FirstBad) != DefaultMaxBad || sum.FirstBad[0].Line != 1 {
		t.Errorf("got %s, %d bad, first %v", brief(got), sum.BadLines, sum.FirstBad[:2])
	}
}

// Sampling spreads over keys that differ only in their last bytes (addresses of one
// subnet): 1% of 10,000 addresses is about 100 clients, not none.
func TestSampleSpreadsOverSimilarKeys(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, `{"time": %d, "client": "10.0.%d.%d"}`+"\n", 1796180400+i, i/100, i%100)
	}
	_, sum := readAll(t, Config{Path: write(t, "s.jsonl", b.String()), Sample: 0.01, Seed: 1})
	// Binomial(10,000, 0.01): 100 ± 10 (one standard deviation); 60..140 is four of them.
	if sum.Requests < 60 || sum.Requests > 140 {
		t.Errorf("sample 0.01 of 10,000 addresses kept %d clients; want about 100", sum.Requests)
	}
}

// A device or a directory is refused at once rather than read forever.
func TestOpenRefusesNonRegularFiles(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/dev/zero", t.TempDir()} {
		if s, err := Open(Config{Path: p, Format: FormatNginx}); err == nil {
			s.Close()
			t.Errorf("%s opened", p)
		}
	}
}

// check drains a source and returns its Check.
func check(t *testing.T, cfg Config) error {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, ok := s.Next(); ok; _, ok = s.Next() {
	}
	return s.Check()
}

// TestRecordingThatCannotStand: a HAR file cut after its second entry, and a log whose
// unreadable lines outnumber its readable ones, are not replayed; as many bad lines as good
// ones still are, and so is the HAR file whole (2 bad entries of 5).
func TestRecordingThatCannotStand(t *testing.T) {
	t.Parallel()
	cut := harDoc[:strings.Index(harDoc, `  {"pageref": "p1", "startedDateTime": "soon"`)]
	if err := check(t, Config{Path: write(t, "cut.har", cut)}); err == nil || !strings.Contains(err.Error(), "ends inside log.entries after entry 2: it is cut short") {
		t.Errorf("a HAR file cut after 2 entries: %v", err)
	}
	good := "10.0.0.1 - - [02/Dec/2026:03:00:00 +0000] \"GET / HTTP/1.1\" 200 612 \"-\" \"curl/8.5\" 0.010 1796180400.110\n"
	mostlyBad := good + "garbage\nnot a line\nnor this\n"
	err := check(t, Config{Path: write(t, "bad.log", mostlyBad), Format: FormatNginx})
	if err == nil || !strings.HasPrefix(err.Error(), "3 of its 4 lines could not be read (the first: line 2: ") {
		t.Errorf("1 good line and 3 bad: %v", err)
	}
	if err := check(t, Config{Path: write(t, "half.log", good+good+"garbage\nnot a line\n"), Format: FormatNginx}); err != nil {
		t.Errorf("2 good lines and 2 bad: %v", err)
	}
	if err := check(t, Config{Path: write(t, "x.har", harDoc)}); err != nil {
		t.Errorf("the whole HAR file: %v", err)
	}
}
