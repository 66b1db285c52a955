// Package ci writes what CI systems read of an invocation: the JUnit XML report (GitHub,
// GitLab and Jenkins test reports) and GitHub Actions annotations on the scenario lines.
//
// # Performance
//
// BenchmarkJUnit (1,000 runs, 100 failing) took 19.6 ms/op, 6.6 MB/op and 98k allocs on a
// 2-core AMD EPYC, Go 1.26, linux/amd64 (35.5 ms with a suite run loading the machine).
package ci
