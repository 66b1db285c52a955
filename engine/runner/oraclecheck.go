package runner

import (
	"fmt"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// oracleChecks holds a model run of a truth file to the oracle: each count the oracle
// predicts and the run's measure falls outside becomes a failed expect check, where
// elsewhere it is only a "model disagreement" line. A truth file's compares hold its model
// runs to the real program's, so the oracle's rules (the negotiated QUIC idle timeout,
// the stale race's window) are held to the real program through them: an oracle that
// predicts what the model, and so the program, did not do fails the file, as a model that
// differs from the program does.
func oracleChecks(rec *report.Run, sc *scenario.Scenario, r *scenario.Run) {
	if rec.Predicted == nil || !rec.Predicted.Disagreement || !isTruthFile(sc) {
		return
	}
	line, col, _ := r.Position("client")
	for _, c := range rec.Predicted.Counts {
		if c.Verdict != report.ModelDisagree {
			continue
		}
		rec.Checks = append(rec.Checks, report.Check{
			Kind: "expect", Expr: "oracle (truth file): " + predictedExpr(c), Observed: map[string]float64{c.Metric: c.Measured},
			File: sc.File, Line: line, Col: col,
		})
		rec.Status = report.StatusFail
	}
}

// isTruthFile: the file compares runs and one of them runs a real program.
func isTruthFile(sc *scenario.Scenario) bool {
	if len(sc.Compare) == 0 {
		return false
	}
	for _, r := range sc.Runs {
		if r.Settings.Client.Exec != nil || r.Settings.Server.Real() {
			return true
		}
	}
	return false
}

// predictedExpr is a predicted count as the expect expression it amounts to.
func predictedExpr(c report.PredictedCount) string {
	switch {
	case c.AtMost:
		return fmt.Sprintf("%s <= %d", c.Metric, c.Value)
	case c.Lo == c.Hi:
		return fmt.Sprintf("%s == %d", c.Metric, c.Value)
	}
	return fmt.Sprintf("%s >= %d && %s <= %d", c.Metric, c.Lo, c.Metric, c.Hi)
}
