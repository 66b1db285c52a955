package htmlreport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport/timeline"
	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

// Results is what a results directory holds, as the report reads it.
type Results struct {
	Dir       string
	Runs      []*RunData
	Scenarios []report.Scenario
	// Skipped counts records of kinds this report does not draw (for example records
	// added by a newer kalab), by kind. They are named on the page, never an error.
	Skipped map[string]int
	// Invocation is the file's last invocation record (kalab's own account of how the
	// invocation ended); nil in files written before kalab wrote them.
	Invocation *report.Invocation
}

// Incomplete says why the results do not hold every planned run to its end ("" when they
// do, or when the file predates invocation records and cannot say): a process killed before
// its closing record, a crash, or an invocation that ended early (Ctrl-C).
func (r *Results) Incomplete() string {
	inv := r.Invocation
	if inv == nil || inv.Completed {
		return ""
	}
	switch inv.State {
	case report.InvocationStarted, report.InvocationEnded, report.InvocationCrashed:
	default:
		return "" // a state this version does not know: it cannot say
	}
	if inv.State == report.InvocationStarted {
		// A killed process never tallied: count what the file holds.
		inv.Tally(runsOf(r.Runs))
	}
	return inv.Describe()
}

func runsOf(rds []*RunData) []report.Run {
	out := make([]report.Run, len(rds))
	for i, rd := range rds {
		out[i] = rd.Run
	}
	return out
}

// RunData is one run record with its request and connection lines.
type RunData struct {
	report.Run
	Requests []timeline.Request
	Conns    []report.Conn
	// Missing says why requests or connections could not be read ("" when they were).
	Missing string
	// Digest is what the page draws of the requests when the run has more than HoldMax of
	// them (Requests is then empty); nil when Requests holds them all.
	Digest *Digest
	// BaselineRun is the run this one was compared with (kalab run --baseline), read from
	// the baseline file the record names when it can still be read; nil otherwise.
	BaselineRun *report.Run
}

// Count is how many requests the run's request file holds.
func (rd *RunData) Count() int {
	if rd.Digest != nil {
		return rd.Digest.N
	}
	return len(rd.Requests)
}

// HasRequests says whether the run has requests to draw.
func (rd *RunData) HasRequests() bool { return rd.Count() > 0 }

// Load reads dir/results.jsonl and every request and connection file its runs name.
// Unknown record kinds and unknown fields are tolerated: the report draws what it knows.
func Load(dir string) (*Results, error) {
	rr, err := report.ReadAny(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		return nil, err
	}
	res := &Results{Dir: dir, Scenarios: rr.Scenarios, Skipped: rr.Skipped, Invocation: rr.Invocation}
	for _, r := range rr.Runs {
		res.Runs = append(res.Runs, &RunData{Run: r})
	}
	for _, rd := range res.Runs {
		loadLines(dir, rd)
	}
	linkBaselines(res.Runs)
	return res, nil
}

// loadLines reads a run's request and connection lines. A run without a verdict (noisy,
// error, interrupted) names no files in its record, but the runner wrote them as it ran:
// they are read from where the runner puts them, and a note says so.
func loadLines(dir string, rd *RunData) {
	var missing []string
	reqFile, connFile := rd.RequestsFile, rd.ConnectionsFile
	if reqFile == "" && rd.Status != report.StatusNotRun {
		if p := report.RequestsPath(rd.Scenario, rd.Variant); exists(filepath.Join(dir, p)) {
			reqFile = p
			rd.Notes = append(rd.Notes, "this run has no verdict ("+rd.Status+"): its requests are drawn from "+p+", which it wrote as it ran")
			if c := report.ConnectionsPath(rd.Scenario, rd.Variant); connFile == "" && exists(filepath.Join(dir, c)) {
				connFile = c
			}
		}
	}
	// The connections first: a digest marks their closes on its lanes.
	if connFile != "" {
		conns, err := readConns(filepath.Join(dir, connFile))
		if err != nil {
			missing = append(missing, err.Error())
		}
		rd.Conns = conns
	}
	switch {
	case reqFile != "":
		if err := readRun(filepath.Join(dir, reqFile), rd); err != nil {
			missing = append([]string{err.Error()}, missing...)
		}
	case rd.Status != report.StatusNotRun: // a not-run run says why above: it sent nothing
		missing = append([]string{"the run left no request file (kalab run --no-requests, or it ended before it sent a request)"}, missing...)
	}
	rd.Missing = strings.Join(missing, "; ")
}

// readRun reads a run's requests: every one when there are at most HoldMax, else a Digest.
func readRun(path string, rd *RunData) error {
	n, err := countRequests(path)
	if err != nil || n <= HoldMax {
		reqs, rerr := readRequests(path)
		rd.Requests = reqs
		return rerr
	}
	ex := newExplainer(rd)
	d, err := digestRequests(path, rd.Conns, timeline.ReadPlan(rd.Params), ex.see)
	if d != nil {
		d.Explain = ex.json()
	}
	rd.Digest = d
	return err
}

func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// linkBaselines finds, for each run compared with a baseline, the baseline's run in the
// file its record names. A baseline file that is gone or unreadable leaves the link out:
// the record's verdicts are still shown.
func linkBaselines(runs []*RunData) {
	files := map[string]*baseline.Baseline{}
	for _, rd := range runs {
		b := rd.Baseline
		if b == nil || b.File == "" || b.RunID == "" {
			continue
		}
		base, seen := files[b.File]
		if !seen {
			base, _ = baseline.Load(b.File)
			files[b.File] = base
		}
		if base == nil {
			continue
		}
		for i := range base.Runs {
			br := &base.Runs[i]
			if br.Scenario == rd.Scenario && br.Variant == rd.Variant && br.RunID == b.RunID {
				rd.BaselineRun = br
				break
			}
		}
	}
}

// knownMs are the *_ms fields of a request line that are not phases or are drawn by name.
var knownMs = map[string]bool{"start_ms": true, "latency_ms": true, "connect_ms": true, "tls_ms": true,
	"first_byte_ms": true, "server_closed_ms": true,
	"scheduled_ms":  true, // an instant, not a phase
	"queue_wait_ms": true} // drawn as a phase where it is not 0 (withQueueWait)

// withQueueWait adds a request's queue wait, when it has one, to the phases it carries
// beside the ones the report knows by name: every line of a scheduled run carries
// queue_wait_ms, 0 where the request began on time, so reading it by name keeps such a
// file from being parsed twice a line for its unknown fields.
func withQueueWait(r *timeline.Request) {
	if q := r.QueueWaitMs; q != nil && *q != 0 {
		r.Extra = append(r.Extra, timeline.Field{Name: "queue_wait_ms", Value: *q})
		sort.Slice(r.Extra, func(i, j int) bool { return r.Extra[i].Name < r.Extra[j].Name })
	}
}

func readRequests(path string) ([]timeline.Request, error) {
	f, err := atomicfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	var out []timeline.Request
	br := bufio.NewReaderSize(f, 256<<10)
	extra := false // whether lines carry *_ms fields beyond the known ones (checked on the first)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var r timeline.Request
			if jerr := json.Unmarshal(b, &r.Request); jerr != nil {
				return out, fmt.Errorf("%s:%d: %v", path, n, jerr)
			}
			if n == 1 || extra {
				fields := unknownMs(b)
				extra = extra || len(fields) > 0
				r.Extra = fields
			}
			withQueueWait(&r)
			out = append(out, r)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, fmt.Errorf("%s: %v", path, err)
		}
	}
	return out, nil
}

// unknownMs returns the numeric *_ms fields of a JSON object that knownMs does not name.
func unknownMs(b []byte) []timeline.Field {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var out []timeline.Field
	for k, v := range m {
		if !strings.HasSuffix(k, "_ms") || knownMs[k] {
			continue
		}
		var x float64
		if json.Unmarshal(v, &x) == nil {
			out = append(out, timeline.Field{Name: k, Value: x})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func readConns(path string) ([]report.Conn, error) {
	f, err := atomicfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	var out []report.Conn
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c report.Conn
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return out, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}
