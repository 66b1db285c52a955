// Package report writes, reads and renders kalab's results: the JSONL run, scenario and
// request records, the terminal summary, and the baseline comparison behind kalab run
// --baseline and kalab diff (the rules each metric is judged by are engine/gate's; the
// comparison's table is the command line's, in cmd/kalab/internal/diff; JUnit XML and
// GitHub annotations are cmd/kalab/internal/ci's).
//
// # Performance
//
// go test -run '^$' -bench . -benchtime 2s ./engine/report on a 2-core AMD EPYC (Oxide
// Virtual Turin-like, nproc 2), Go 1.26, linux/amd64:
//
//	BenchmarkCompareRun    13 µs/op     8.4 KB/op     10 allocs  (every metric of one run)
//	BenchmarkLoadBaseline  130 ms/op    47.4 MB/op   939k allocs (1,000 runs, 780 KB, schema-checked)
//
// (With a suite run loading the machine: 31 µs and 243 ms.)
//
// So --baseline adds well under a millisecond per run, and loading even a 1,000-run
// baseline (dominated by the JSON Schema check) costs well under a second, once.
package report
