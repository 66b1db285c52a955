// Package report writes and reads kalab's results: the JSONL run, scenario, invocation,
// request and connection records, their schema check, and the few words about a record
// that every output shares (Observed, BriefError, the version notes). What kalab run prints
// at its end is cmd/kalab/internal/terminal's; the baseline comparison behind kalab run
// --baseline and kalab diff is engine/report/baseline's (the rules each metric is judged by
// are engine/gate's; the comparison's table is the command line's, in
// cmd/kalab/internal/diff; JUnit XML and GitHub annotations are cmd/kalab/internal/ci's).
package report
