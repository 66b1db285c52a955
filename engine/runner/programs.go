package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// ExecPolicy says which programs named by a scenario file a run may start. A scenario
// file looks like data, but client.exec and server.exec/command make kalab run start
// programs; the policy is the user's opt-in (kalab run --allow-exec, KALAB_ALLOW_EXEC).
type ExecPolicy int

// The policies, from the strictest.
const (
	// ExecNone starts no program a scenario names (the default).
	ExecNone ExecPolicy = iota
	// ExecBundled starts kalab's bundled adapters (client.exec: node-agent, curl, ...) and
	// the real servers kalab configures itself (server.exec: nginx, node, haproxy), never
	// an arbitrary command.
	ExecBundled
	// ExecAll starts any program, the user's commands included.
	ExecAll
)

// String is the policy as --allow-exec takes it.
func (p ExecPolicy) String() string {
	switch p {
	case ExecBundled:
		return "bundled"
	case ExecAll:
		return "all"
	}
	return "none"
}

// ParseExecPolicy reads --allow-exec's value or $KALAB_ALLOW_EXEC: none (also 0, false
// and the empty string), bundled, or all (also 1, true).
func ParseExecPolicy(s string) (ExecPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none", "0", "false":
		return ExecNone, nil
	case "bundled":
		return ExecBundled, nil
	case "all", "1", "true":
		return ExecAll, nil
	}
	return ExecNone, fmt.Errorf("%q: use none, bundled or all", s)
}

// ExecPolicyFromEnv is the policy $KALAB_ALLOW_EXEC sets; unset is ExecNone.
func ExecPolicyFromEnv() (ExecPolicy, error) {
	p, err := ParseExecPolicy(os.Getenv(EnvAllowExec))
	if err != nil {
		return ExecNone, fmt.Errorf("$%s: %w", EnvAllowExec, err)
	}
	return p, nil
}

// EnvAllowExec is the environment variable a CI job sets to allow programs.
const EnvAllowExec = "KALAB_ALLOW_EXEC"

// Program is a program a run would start, and where its file names it.
type Program struct {
	File      string
	Line, Col int
	Path      string // client.exec, server.exec, server.command or balancer.exec
	Scenario  string
	Variant   string
	// Bundled: a bundled adapter or a server kalab configures, in a run without env:
	// (allowed by ExecBundled).
	Bundled bool
	// Command is what would start, as text: the adapter or server name and its runtime,
	// or the user's command.
	Command string
}

// Allowed reports whether the policy lets the program start.
func (p Program) Allowed(policy ExecPolicy) bool {
	return policy == ExecAll || (policy == ExecBundled && p.Bundled)
}

// Programs lists, in plan order, every program the plan's runs would start: one entry
// per run and program. It starts nothing.
func Programs(plan *scenario.Plan) []Program {
	var out []Program
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			out = append(out, runPrograms(sc.File, r)...)
		}
	}
	return out
}

func runPrograms(file string, r *scenario.Run) []Program {
	var out []Program
	add := func(path, at string, bundled bool, command string) {
		if env := r.Settings.Env; len(env) > 0 {
			// NODE_OPTIONS, LD_PRELOAD and their kind make a bundled program run other code.
			bundled = false
			command += " with env: " + envNames(env)
		}
		p := Program{File: file, Path: path, Scenario: r.Scenario, Variant: r.Variant, Bundled: bundled, Command: command}
		var ok bool
		if p.Line, p.Col, ok = r.Position(at); !ok {
			p.Line, p.Col, _ = r.Position(path)
		}
		out = append(out, p)
	}
	if e := r.Settings.Client.Exec; e != nil {
		if e.Adapter != "" {
			what := e.Adapter
			if e.Version != "" {
				what += " " + e.Version
			}
			add("client.exec", "client.exec", true, what+" (bundled adapter)")
		} else {
			add("client.exec", "client.exec.command", false, quoteArgs(e.Command))
		}
	}
	bs := r.Settings.Balancers()
	for i, b := range bs {
		if b.Real() {
			path := scenario.BalancerPath(i, len(bs)) + ".exec"
			add(path, path, true, b.Exec+" (bundled balancer)")
		}
	}
	s := r.Settings.Server
	switch {
	case s.Exec != "":
		add("server.exec", "server.exec", true, s.Exec+" (bundled server)")
	case s.Command != "":
		add("server.command", "server.command", false, "/bin/sh -c "+strconv.Quote(s.Command))
	}
	return out
}

// quoteArgs renders argv so that an argument with a space stays one argument.
func quoteArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			a = strconv.Quote(a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// CheckExec refuses, as load errors with file:line:col, every program of the plan the
// policy does not allow. Each place a file names a program is reported once.
func CheckExec(plan *scenario.Plan, policy ExecPolicy) scenario.Diagnostics {
	var diags scenario.Diagnostics
	seen := map[string]bool{}
	for _, p := range Programs(plan) {
		if p.Allowed(policy) {
			continue
		}
		d := scenario.Diagnostic{File: p.File, Line: p.Line, Col: p.Col, Path: p.Path, Message: refusal(p, policy)}
		if k := d.String(); !seen[k] {
			seen[k] = true
			diags = append(diags, d)
		}
	}
	return diags
}

func refusal(p Program, policy ExecPolicy) string {
	how := "pass --allow-exec=bundled (or set " + EnvAllowExec + "=bundled) to allow kalab's bundled adapters and servers, or --allow-exec (" + EnvAllowExec + "=1) for any program"
	if !p.Bundled {
		how = "pass --allow-exec (or set " + EnvAllowExec + "=1) to allow any program"
		if policy == ExecBundled {
			how = "--allow-exec=bundled allows only kalab's bundled adapters and servers; " + how
		}
	}
	return fmt.Sprintf("would start %s; kalab run starts the programs a scenario names only when allowed: %s", p.Command, how)
}

// envNames lists the names of env: entries (their values may be secrets).
func envNames(env []string) string {
	names := make([]string, len(env))
	for i, e := range env {
		names[i], _, _ = strings.Cut(e, "=")
	}
	return strings.Join(names, ", ")
}
