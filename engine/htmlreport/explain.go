package htmlreport

import (
	"encoding/json"
	"strconv"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/report"
)

// explainAbove bounds the runs whose failures are explained in the page: beyond it the
// loader keeps a Digest, not the requests (HoldMax), and kalab explain tells one request
// at a time.
const explainAbove = HoldMax

// maxExplained bounds the paragraphs one run carries into the page.
const maxExplained = 2000

// explanations is, as JSON for the run's facts panel, kalab explain's paragraph for each
// failed, retried, re-sent or 5xx request of a run (keyed by request number): the same
// text the command prints. "" when the run has none or is too large.
func explanations(rd *RunData) string {
	if len(rd.Requests) == 0 || len(rd.Requests) > explainAbove {
		return ""
	}
	reqs := make([]report.Request, len(rd.Requests))
	for i, q := range rd.Requests {
		reqs[i] = q.Request
	}
	run, err := explain.NewRun(&rd.Run, reqs, rd.Conns)
	if err != nil {
		return ""
	}
	out := map[string]string{}
	for _, seq := range run.Troubled() {
		if len(out) == maxExplained {
			break
		}
		if text, ok := explain.Request(run, seq); ok {
			out[strconv.Itoa(seq)] = text
		}
	}
	if len(out) == 0 {
		return ""
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}
