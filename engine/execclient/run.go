// Package execclient runs a real client program against a run's topology: it writes the
// plan file, starts the program (a bundled adapter or the user's own command), reads one
// JSON line per request from its stdout and turns each into a client.Event, with the
// runtime's error mapped to kalab's classes and its raw text kept.
package execclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// ErrMissing marks a runtime or command that is not installed: the run is not run (no
// verdict, exit 3 unless kalab run --allow-missing; --require-clients makes it an error).
// The message says how to install what is missing.
var ErrMissing = errors.New("client runtime not available")

// Config is one exec client run.
type Config struct {
	Adapter *Adapter // a bundled adapter, or nil for Command
	Command []string // the user's program and its arguments
	Dir     string   // working directory of Command (the scenario file's directory)
	URL     string   // the target, through the run's link
	CAPEM   []byte   // the server's certificate; nil for plain HTTP
	Plan    Plan     // URL, CAFile and the protocol fields are filled in by Run
	// Stderr receives the program's standard error as it comes; nil discards it. The
	// last part is kept in Report.Stderr either way.
	Stderr io.Writer
}

// Identity is what ran: the executable and the versions it reports.
type Identity struct {
	Adapter    string   `json:"adapter,omitempty"` // bundled adapter name
	Command    []string `json:"command"`           // what was started
	Executable string   `json:"executable"`        // the runtime's resolved path
	Version    string   `json:"version,omitempty"` // the runtime's own version line(s)
}

// Report is what Run learned besides the events.
type Report struct {
	Identity Identity
	Lines    int           // request lines read
	Stderr   string        // the end of the program's standard error
	CPU      time.Duration // user and system time of the program (its own process)
	MaxRSS   int64         // its peak resident set, bytes; 0 where unknown
}

// Identify resolves the runtime and asks it for its versions, without running the plan.
// A runtime that is not on PATH (or, for python-requests, lacks the module) returns an
// error wrapping ErrMissing.
func Identify(ctx context.Context, cfg Config) (Identity, error) {
	if a := cfg.Adapter; a != nil {
		id := Identity{Adapter: a.Name, Command: []string{a.Interpreter, a.Script}}
		path, err := exec.LookPath(a.Runtime)
		if err != nil {
			return id, fmt.Errorf("%w: the %s adapter needs %s, which is not on PATH (%s)", ErrMissing, a.Name, a.Runtime, InstallHint(a.Runtime))
		}
		id.Executable = path
		if a.Interpreter != a.Runtime {
			if _, err := exec.LookPath(a.Interpreter); err != nil {
				return id, fmt.Errorf("%w: the %s adapter needs %s, which is not on PATH (%s)", ErrMissing, a.Name, a.Interpreter, InstallHint(a.Interpreter))
			}
		}
		// Generous: a loaded machine can take seconds to start an interpreter.
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		out, err := exec.CommandContext(pctx, path, a.probe...).CombinedOutput()
		if pctx.Err() != nil {
			// Slow is not missing: this is an error, not a skip.
			return id, fmt.Errorf("%s did not say its version within %v", a.Runtime, probeTimeout)
		}
		if err != nil {
			return id, fmt.Errorf("%w: %s %s: %v: %s (%s)", ErrMissing, a.Runtime, strings.Join(a.probe, " "), err, firstLine(string(out)), InstallHint(a.Name))
		}
		id.Version = firstLine(string(out))
		if a.Runtime == "node" && a.Name == "node-fetch" {
			if major := nodeMajor(id.Version); major > 0 && major < 18 {
				return id, fmt.Errorf("%w: node-fetch needs Node 18 or later (global fetch), found %s (%s)", ErrMissing, id.Version, InstallHint("node"))
			}
		}
		return id, nil
	}
	if len(cfg.Command) == 0 {
		return Identity{}, errors.New("exec: no adapter and no command")
	}
	id := Identity{Command: cfg.Command}
	name := cfg.Command[0]
	if strings.Contains(name, "/") && !filepath.IsAbs(name) {
		name = filepath.Join(cfg.Dir, name)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return id, fmt.Errorf("%w: command %s: %v (put it on PATH, or name it by a path relative to the scenario file)", ErrMissing, cfg.Command[0], unwrapExec(err))
	}
	id.Executable = path
	return id, nil
}

// installHints say how to install each program an adapter needs.
var installHints = map[string]string{
	"node":            "install Node 20 or later from https://nodejs.org or NodeSource's packages (Debian 12's nodejs is 18)",
	"curl":            "install it: apt-get install curl, or brew install curl",
	"python3":         "install it: apt-get install python3 python3-requests, or https://python.org and pip install requests",
	"python-requests": "install the requests module: apt-get install python3-requests, or pip install requests",
	"bash":            "install it: apt-get install bash",
}

// InstallHint says how to install program (a runtime, or an adapter whose runtime lacks a
// module it needs).
func InstallHint(program string) string {
	if h, ok := installHints[program]; ok {
		return h
	}
	return "install " + program + " and put it on PATH"
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// nodeMajor reads the major version from "node 20.20.2 undici ...".
func nodeMajor(v string) int {
	f := strings.Fields(v)
	if len(f) < 2 {
		return 0
	}
	major, _, _ := strings.Cut(f[1], ".")
	n, _ := strconv.Atoi(major)
	return n
}

// probeTimeout bounds the version probe of a runtime.
const probeTimeout = 60 * time.Second

// stderrKeep is how much of a program's standard error a report keeps.
const stderrKeep = 4 << 10

// Run writes the plan, starts the program and calls emit for each request line as it
// arrives (from this goroutine only). It returns when the program has exited and its
// output is read. Every index of the plan must be reported exactly once and the program
// must exit 0; otherwise Run returns an error saying what was wrong (the events already
// emitted stand). When ctx ends the program's process group is killed.
func Run(ctx context.Context, cfg Config, id Identity, emit func(client.Event)) (Report, error) {
	rep := Report{Identity: id}
	dir, err := os.MkdirTemp("", "kalab-exec-")
	if err != nil {
		return rep, fmt.Errorf("exec: %w", err)
	}
	defer os.RemoveAll(dir)
	plan := cfg.Plan
	plan.URL = cfg.URL
	env, err := plan.write(dir, cfg.CAPEM)
	if err != nil {
		return rep, fmt.Errorf("exec: writing the plan: %w", err)
	}
	var argv []string
	workDir := cfg.Dir
	if a := cfg.Adapter; a != nil {
		src, err := a.script()
		if err != nil {
			return rep, fmt.Errorf("exec: adapter %s: %w", a.Name, err)
		}
		script := filepath.Join(dir, a.Script)
		if err := os.WriteFile(script, src, 0o644); err != nil {
			return rep, fmt.Errorf("exec: %w", err)
		}
		argv = []string{a.Interpreter, script}
		if a.Runtime == "node" && plan.CAFile != "" {
			env = append(env, "NODE_EXTRA_CA_CERTS="+plan.CAFile) // fetch has no per-call CA option
		}
		workDir = dir
	} else {
		argv = append([]string{id.Executable}, cfg.Command[1:]...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = workDir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = nil
	ownGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	tail := &tailBuffer{max: stderrKeep}
	if cfg.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, cfg.Stderr)
	} else {
		cmd.Stderr = tail
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return rep, fmt.Errorf("exec: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return rep, fmt.Errorf("exec: starting %s: %w", strings.Join(argv, " "), err)
	}
	seen := make([]bool, plan.Requests)
	var protoErr error
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		arrived := time.Now()
		ev, ok, err := parseLine(sc.Bytes(), arrived)
		if err != nil {
			if protoErr == nil {
				protoErr = fmt.Errorf("stdout line %d: %w", lineNo, err)
			}
			continue
		}
		if !ok {
			continue // not a request line: an identity line, or output the protocol ignores
		}
		if ev.Seq < 0 || ev.Seq >= plan.Requests {
			if protoErr == nil {
				protoErr = fmt.Errorf("stdout line %d: index %d is outside the plan's 0..%d", lineNo, ev.Seq, plan.Requests-1)
			}
			continue
		}
		if seen[ev.Seq] {
			if protoErr == nil {
				protoErr = fmt.Errorf("stdout line %d: index %d reported twice", lineNo, ev.Seq)
			}
			continue
		}
		seen[ev.Seq] = true
		rep.Lines++
		emit(ev)
	}
	scanErr := sc.Err()
	if scanErr != nil {
		_, _ = io.Copy(io.Discard, stdout) // let the program finish writing
	}
	waitErr := cmd.Wait()
	rep.Stderr = tail.String()
	if ps := cmd.ProcessState; ps != nil {
		rep.CPU = ps.UserTime() + ps.SystemTime()
		rep.MaxRSS = maxRSS(ps)
	}
	switch {
	case ctx.Err() != nil:
		return rep, ctx.Err()
	case waitErr != nil:
		return rep, fmt.Errorf("the client %s: %v%s", id.label(), waitErr, stderrNote(rep.Stderr))
	case scanErr != nil:
		return rep, fmt.Errorf("reading the client's output: %w", scanErr)
	case protoErr != nil:
		return rep, fmt.Errorf("the client %s broke the exec protocol: %w", id.label(), protoErr)
	case rep.Lines < plan.Requests:
		return rep, fmt.Errorf("the client %s reported %d of the plan's %d requests%s", id.label(), rep.Lines, plan.Requests, stderrNote(rep.Stderr))
	}
	return rep, nil
}

func (id Identity) label() string {
	if id.Adapter != "" {
		return id.Adapter
	}
	return strings.Join(id.Command, " ")
}

func stderrNote(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 && len(s)-i < 400 {
		// The last line is usually the one that says what went wrong.
		return "; its stderr ends: " + s[i+1:]
	}
	if len(s) > 400 {
		s = s[len(s)-400:]
	}
	return "; its stderr ends: " + s
}

// line is one request as a client reports it (the exec protocol).
type line struct {
	Index       *int     `json:"index"`
	Start       *float64 `json:"start"` // Unix epoch milliseconds
	End         *float64 `json:"end"`
	LatencyMs   *float64 `json:"latency_ms"`
	Status      int      `json:"status"`
	Error       string   `json:"error"`
	Code        flexStr  `json:"code"`
	Bytes       int64    `json:"bytes"`
	Conn        flexStr  `json:"conn"`
	ConnRequest flexStr  `json:"conn_request"`
	Attempts    int      `json:"attempts"`
}

// flexStr accepts a JSON string, number or null, so that "3" and 3 mean the same.
type flexStr string

func (f *flexStr) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexStr(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string or a number, got %s", b)
	}
	*f = flexStr(n.String())
	return nil
}

func epochMs(ms float64) time.Time {
	return time.UnixMicro(int64(ms * 1000))
}

// parseLine reads one stdout line. ok is false for a line that is not a request (no
// "index"): identity lines and any other output a program prints.
func parseLine(b []byte, arrived time.Time) (ev client.Event, ok bool, err error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return ev, false, nil
	}
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return ev, false, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Index == nil {
		return ev, false, nil
	}
	end := arrived
	if l.End != nil {
		end = epochMs(*l.End)
	}
	start := end
	switch {
	case l.Start != nil:
		start = epochMs(*l.Start)
	case l.LatencyMs != nil:
		start = end.Add(-time.Duration(*l.LatencyMs * float64(time.Millisecond)))
	}
	lat := end.Sub(start)
	if l.LatencyMs != nil {
		lat = time.Duration(*l.LatencyMs * float64(time.Millisecond))
	}
	if lat < 0 {
		return ev, false, fmt.Errorf("index %d ends before it starts", *l.Index)
	}
	ev = client.Event{Seq: *l.Index, Start: start, Latency: lat, Status: l.Status, BytesRead: l.Bytes, Attempts: max(l.Attempts, 1)}
	if conn, err := strconv.ParseUint(string(l.Conn), 10, 64); err == nil {
		// The program echoes the server's Kalab-Conn: its connection ids are the server's.
		ev.ConnID, ev.ServerConn = conn, conn
	}
	if n, err := strconv.ParseInt(string(l.ConnRequest), 10, 64); err == nil {
		ev.Reused = n > 1
	}
	if l.Status == 0 || l.Error != "" {
		ev.Class = Classify(string(l.Code), l.Error)
		ev.Error = l.Error
		if ev.Error == "" {
			ev.Error = "no response"
		}
		ev.Code = string(l.Code)
	}
	return ev, true, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
