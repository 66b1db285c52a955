// Package terminal writes what kalab run and kalab merge print once their runs are
// recorded: the summary table of the runs with a compare row per scenario, the lines of
// what was rerun, replayed, predicted or run at an unverified version, every check that did
// not pass and the totals (Summary); the same without the table for --quiet (Brief); and
// the hints that say why the exit code is 3 when every run that ran passed. It reads run and
// scenario records (engine/report) and writes text; it decides no verdict.
package terminal
