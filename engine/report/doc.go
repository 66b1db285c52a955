// Package report writes, reads and renders kalab's results: the JSONL run, scenario and
// request records, their schema check, and the terminal summary. The baseline comparison
// behind kalab run --baseline and kalab diff is engine/report/baseline's (the rules each
// metric is judged by are engine/gate's; the comparison's table is the command line's, in
// cmd/kalab/internal/diff; JUnit XML and GitHub annotations are cmd/kalab/internal/ci's).
package report
