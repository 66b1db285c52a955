// Package childenv builds the environment of every program kalab starts (exec clients,
// real servers, the version probes of their runtimes): an allowlist of kalab's own
// variables, what the scenario names under env:, and kalab's KALAB_* protocol variables;
// nothing else of kalab's environment (a CI job's tokens and keys) reaches a child.
package childenv

import (
	"os"
	"runtime"
	"strings"
)

// Inherited lists the variables of kalab's own environment every child gets, when set:
// what a program needs to be found and to run (PATH, HOME, a temporary directory, its
// locale and time zone). Windows adds what its programs cannot start without.
func Inherited() []string {
	names := []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"}
	if runtime.GOOS == "windows" {
		names = append(names, "SYSTEMROOT", "COMSPEC", "PATHEXT", "TEMP", "TMP", "USERPROFILE", "WINDIR")
	}
	return names
}

// For returns a child's environment: the Inherited variables from kalab's environment,
// then the scenario's env: entries (NAME=value sets a value; a bare NAME passes kalab's
// own value through, when it has one), then the protocol variables kalab sets itself
// (KALAB_*), in that order of precedence: a later entry of the same name replaces an
// earlier one, so the result holds each name once.
func For(scenarioEnv, protocol []string) []string {
	var out []string
	for _, name := range Inherited() {
		if v, ok := os.LookupEnv(name); ok {
			out = set(out, name+"="+v)
		}
	}
	for _, e := range scenarioEnv {
		if strings.Contains(e, "=") {
			out = set(out, e)
		} else if v, ok := os.LookupEnv(e); ok {
			out = set(out, e+"="+v)
		}
	}
	for _, e := range protocol {
		out = set(out, e)
	}
	return out
}

// set puts NAME=value into env, replacing an entry of the same name.
func set(env []string, kv string) []string {
	name, _, _ := strings.Cut(kv, "=")
	for i, e := range env {
		if n, _, _ := strings.Cut(e, "="); sameName(n, name) {
			env[i] = kv
			return env
		}
	}
	return append(env, kv)
}

// sameName compares variable names as the platform does (Windows ignores case).
func sameName(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}
