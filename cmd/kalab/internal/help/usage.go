package help

// Usage is kalab help: the commands and the exit codes.
const Usage = `kalab - declarative HTTP connection-reuse scenarios

Usage:
  kalab run [files or dirs...]          run scenarios and check their results (default: scenarios/)
  kalab validate [files or dirs...]     check scenario files without running them (default: scenarios/)
  kalab truth [run flags]               run the bundled truth files: does each preset hold for the
                                        programs installed here? (kalab run with --allow-exec=bundled)
  kalab diff OLD NEW                    compare two results files metric by metric, as --baseline does
  kalab report [RESULTS_DIR]            write a self-contained HTML report (default: results/latest)
  kalab explain [RESULTS_DIR] [flags]   why each failed, retried, re-sent or 502
                                        request went that way (--run, --request N)
  kalab merge DIR... --out DIR          put the results of kalab run --shard I/N back together and gate them
  kalab sweep FILE --param P --range R  search a parameter for the value where the run's checks start
                                        to fail (the safe setting), over seeds, with a plot
  kalab probe URL [--write FILE]        measure a live server's idle close, hint, requests per connection
                                        and round trip; write them down as a scenario
  kalab schema                          print the scenario JSON Schema
  kalab version                         print the version
  kalab help [metrics|presets|clients]  this help, each metric's meaning and unit, the presets, or
                                        the real-client adapters (client.exec) and error table
  kalab help servers                    the real servers (server.exec, command, url) and their mappings
  kalab help verdicts                   pass, fail, not evaluated, not run, and the exit codes
  kalab init [DIR]                      write a starter scenario and a GitHub Actions workflow
  kalab completion bash|zsh|fish        print a shell completion script

Run 'kalab COMMAND --help' for a command's flags.

Exit codes: 0 every planned run ran and every check passed; 1 a check failed or a baseline
regressed; 2 the input is invalid (nothing ran); 3 no verdict (the engine failed, a run's
timing was too noisy, a program it needs is not installed: --allow-missing accepts that, or
kalab could not start: too few file descriptors, an unusable TMPDIR); 130 interrupted. A check not evaluated is never a pass (kalab help verdicts).
`

// Truth is kalab truth --help, before its flags (kalab run's).
const Truth = `truth [flags]

Runs the truth files the binary embeds (scenarios/truth/) against the programs installed
here, as kalab run builtin:truth/ --allow-exec=bundled would: kalab's own adapters and real
servers may start (an --allow-exec of yours replaces that), no other program. Then, for each
preset a truth file verifies and each version of its real program that ran, it says whether
the preset holds for that version, does not (the check that failed), or has no verdict (the
run without one and why: the program is not installed, the machine was too busy to time it):

  go-default: NO VERDICT for go 1.22.12 (scenarios/truth/go-1.22.yaml): 5 of 6 runs agree,
    1 no verdict; holds for go 1.26.8 (scenarios/truth/go.yaml)
    go 1.22.12 no verdict: scenarios/truth/go-1.22.yaml / real-race: error: noisy: ...

kalab truth takes no files: a file of yours is no truth file (kalab run --allow-exec=bundled
FILE runs it with kalab's programs). --filter '^truth-go/' runs some of the truth files. An
adapter that is built (go-http) is built once, before any run starts.

Exit codes: 0 every preset held for every version that ran; 1 a preset does not hold for a
version (standard error names it); 2 bad flags, or a file given; 3 no verdict for a version
and none failed, or kalab could not start (TMPDIR not writable or full: the cause is named).`
