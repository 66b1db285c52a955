// Package baseline compares runs with a baseline: it loads an earlier results.jsonl as the
// baseline (refusing one that is partial, corrupt or not kalab's), layers the tolerances of
// the scenario files and the --tolerance flags over the default rules, and compares each
// run with its baseline run, excusing what a busier machine could have added to its times.
// It is the comparison behind kalab run --baseline, kalab diff and kalab report --baseline;
// the rules each metric is judged by are engine/gate's, the comparison's table is the
// command line's (cmd/kalab/internal/diff).
//
// # Performance
//
// go test -run '^$' -bench . -benchtime 2s ./engine/report/baseline on a 2-core AMD EPYC
// (Oxide Virtual Turin-like, nproc 2), Go 1.26, linux/amd64:
//
//	BenchmarkCompareRun    13 µs/op     8.4 KB/op     10 allocs  (every metric of one run)
//	BenchmarkLoadBaseline  130 ms/op    47.4 MB/op   939k allocs (1,000 runs, 780 KB, schema-checked)
//
// (With a suite run loading the machine: 31 µs and 243 ms.)
//
// So --baseline adds well under a millisecond per run, and loading even a 1,000-run
// baseline (dominated by the JSON Schema check) costs well under a second, once.
package baseline
