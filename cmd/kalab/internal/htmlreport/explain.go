package htmlreport

import (
	"encoding/json"
	"strconv"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/report"
)

// maxExplained bounds the paragraphs one run carries into the page.
const maxExplained = 2000

// explanations is, as JSON for the run's facts panel, kalab explain's paragraph for each
// failed, retried, re-sent or 5xx request of a run (keyed by request number): the same
// text the command prints. "" when the run has none. A run read as a Digest has them from
// its stream (explainStream).
func explanations(rd *RunData) string {
	if rd.Digest != nil {
		return rd.Digest.Explain
	}
	if len(rd.Requests) == 0 {
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
	return explainJSON(out)
}

func explainJSON(out map[string]string) string {
	if len(out) == 0 {
		return ""
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}

// explainer explains the troubled requests of a run too large to hold (a Digest) as the
// digest's pass reads them: each from the records kalab explain reads of it, the request
// itself, the one its client sent before it and the last on its connection that carried a
// response, so that memory grows with clients and connections, not requests.
type explainer struct {
	rd       *RunData
	prev     map[string]report.Request // each client's last request
	answered map[uint64]report.Request // each connection's last request with a response
	out      map[string]string
}

func newExplainer(rd *RunData) *explainer {
	return &explainer{rd: rd, prev: map[string]report.Request{}, answered: map[uint64]report.Request{}, out: map[string]string{}}
}

func (e *explainer) see(r *report.Request) {
	q := *r
	if len(e.out) < maxExplained && (q.Class != "" || q.Attempts > 1 || q.HiddenRetries > 0 || q.Status >= 500 || q.BackendAttempts > 1) {
		var sub []report.Request
		if p, ok := e.prev[q.Client]; ok {
			sub = append(sub, p)
		}
		if a, ok := e.answered[q.Conn]; ok && q.Conn != 0 && (len(sub) == 0 || sub[0].Seq != a.Seq) {
			sub = append(sub, a)
		}
		if run, err := explain.NewRun(&e.rd.Run, append(sub, q), e.rd.Conns); err == nil {
			run.Subset = true
			if text, ok := explain.Request(run, q.Seq); ok {
				e.out[strconv.Itoa(q.Seq)] = text
			}
		}
	}
	e.prev[q.Client] = q
	if q.Status > 0 {
		e.answered[q.Conn] = q
	}
}

func (e *explainer) json() string { return explainJSON(e.out) }
