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
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/internal/childenv"
	"github.com/kalab-dev/kalab/engine/internal/proc"
	"github.com/kalab-dev/kalab/engine/loopback"
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
	// Version is client.exec's version: the release of its library a bundled adapter
	// runs instead of its runtime's own; "" for the runtime's own.
	Version string
	// Env is the scenario's env: entries (NAME=value, or NAME to pass kalab's own value);
	// the program gets only these, an allowlist and the protocol's (engine/internal/childenv).
	Env []string
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
	program    string   // the program an adapter with a build step was built into
	undici     string   // the undici package node-fetch imports fetch from; "" for Node's own
	libcurl    string   // the libcurl release the libcurl adapter loads; "" for the first it finds
}

// Report is what Run learned besides the events.
type Report struct {
	Identity Identity
	Lines    int           // request lines read
	Stderr   string        // the end of the program's standard error
	CPU      time.Duration // user and system time of the program (its own process)
	MaxRSS   int64         // its peak resident set, bytes; 0 where unknown
	// Late is how late the program began each request it (or kalab, for the first of a
	// burst after a pause, when the program did not say) knows the planned start of: the
	// real client's timing source, judged like the model's schedule timers.
	Late []time.Duration
	// LateDerived is how many of Late kalab derived from the schedule it gave.
	LateDerived int
}

// Identify resolves the runtime and asks it for its versions, without running the plan.
// A runtime that is not on PATH (or, for python-requests, lacks the module) returns an
// error wrapping ErrMissing.
func Identify(ctx context.Context, cfg Config) (Identity, error) {
	if a := cfg.Adapter; a != nil {
		id := Identity{Adapter: a.Name, Command: []string{a.Interpreter, a.Script}}
		if a.Native {
			id.Command = []string{a.Runtime} // kalab drives it itself: no script
		}
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
		probe, err := a.probeCommand(pctx, path, cfg.Version)
		if err != nil {
			return id, err
		}
		probe.Env = a.childEnv(cfg.Env, versionEnv(cfg))
		out, err := probe.CombinedOutput()
		if pctx.Err() != nil {
			// Slow is not missing: this is an error, not a skip.
			return id, fmt.Errorf("%s did not say its version within %v", a.Runtime, probeTimeout)
		}
		if err != nil {
			return id, fmt.Errorf("%w: %s %s: %v: %s (%s)", ErrMissing, a.Runtime, strings.Join(probe.Args[1:], " "), err, probeError(cfg, string(out)), versionHint(cfg))
		}
		id.Version = versionLine(string(out), a.Program)
		if a.Runtime == "node" && a.Name == "node-fetch" {
			if major := nodeMajor(id.Version); major > 0 && major < 18 {
				return id, fmt.Errorf("%w: node-fetch needs Node 18 or later (global fetch), found %s (%s)", ErrMissing, id.Version, InstallHint("node"))
			}
		}
		if err := useVersion(cfg, &id); err != nil {
			return id, err
		}
		if len(a.Build) > 0 {
			prog, err := a.built(ctx, path, id.Version, a.childEnv(cfg.Env, versionEnv(cfg)))
			if err != nil {
				return id, err
			}
			id.program, id.Command = prog, []string{prog}
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
	"libcurl":         "install it: apt-get install libcurl4 (the library under the curl command), or brew install curl; another release: unpack it under /opt/kalab/libcurl-VERSION/ or name its libcurl.so.4 in KALAB_LIBCURL (docs/real-programs.md)",
	"go":              "install Go 1.24 or later from https://go.dev/dl (the go-http adapter is built with it)",
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

// versionLine is the line of a probe's output that names program (Debian's chromium wrapper
// script prints a shell complaint first), else its first line.
func versionLine(out, program string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.EqualFold(f[0], program) {
			return strings.TrimSpace(line)
		}
	}
	return firstLine(out)
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
// emitted stand). The program runs in a process group of its own (engine/internal/proc), killed when
// ctx ends, when kalab dies, and as soon as the program itself exits, so that a child it
// left behind holding its output cannot keep the run waiting.
func Run(ctx context.Context, cfg Config, id Identity, emit func(client.Event)) (Report, error) {
	rep := Report{Identity: id}
	if err := loopbackURL(cfg.URL); err != nil {
		return rep, fmt.Errorf("exec: the client's target: %w", err)
	}
	dir, err := os.MkdirTemp("", "kalab-exec-")
	if err != nil {
		return rep, fmt.Errorf("exec: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: nothing more to do if removing it fails
	plan := cfg.Plan
	plan.URL = cfg.URL
	cmd, argv, err := buildCommand(ctx, cfg, id, dir, plan)
	if err != nil {
		return rep, err
	}
	tail := &tailBuffer{max: stderrKeep}
	var errDst io.Writer = tail
	if cfg.Stderr != nil {
		errDst = io.MultiWriter(tail, cfg.Stderr)
	}
	st, err := start(cmd, dir)
	if err != nil {
		return rep, fmt.Errorf("exec: starting %s: %w", strings.Join(argv, " "), err)
	}
	defer st.group.Release()
	stderrDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(errDst, st.stderr)
		close(stderrDone)
	}()
	lr := newLineReader(plan, emit)
	scanErr := lr.read(st.stdout)
	if scanErr != nil {
		_, _ = io.Copy(io.Discard, st.stdout) // let the program finish writing
	}
	waitErr := <-st.waited
	<-stderrDone
	st.close()
	rep.Lines = lr.lines
	rep.Stderr = tail.String()
	rep.Late, rep.LateDerived = lr.late.result()
	if ps := cmd.ProcessState; ps != nil {
		rep.CPU = ps.UserTime() + ps.SystemTime()
		rep.MaxRSS = maxRSS(ps)
	}
	return rep, runError(ctx, id, plan, rep, waitErr, scanErr, lr.protoErr)
}

// buildCommand writes the plan into dir and prepares the program that runs it (not yet
// started): its argv, working directory and environment.
func buildCommand(ctx context.Context, cfg Config, id Identity, dir string, plan Plan) (*exec.Cmd, []string, error) {
	env, err := plan.write(dir, cfg.CAPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("exec: writing the plan: %w", err)
	}
	argv, workDir, env, err := commandLine(cfg, id, dir, plan, env)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = workDir
	if cfg.Adapter != nil {
		cmd.Env = cfg.Adapter.childEnv(cfg.Env, env)
	} else {
		cmd.Env = childenv.For(cfg.Env, env)
	}
	cmd.Stdin = nil
	cmd.WaitDelay = 2 * time.Second
	return cmd, argv, nil
}

// runError is Run's verdict on a finished program, the first problem in order of cause:
// cancellation, the program's exit, its output stream, the protocol, missing requests.
func runError(ctx context.Context, id Identity, plan Plan, rep Report, waitErr, scanErr, protoErr error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case waitErr != nil:
		return fmt.Errorf("the client %s: %v%s", id.label(), waitErr, stderrNote(rep.Stderr))
	case scanErr != nil:
		return fmt.Errorf("reading the client's output: %w", scanErr)
	case protoErr != nil:
		return fmt.Errorf("the client %s broke the exec protocol: %w", id.label(), protoErr)
	case rep.Lines < plan.Requests:
		return fmt.Errorf("the client %s reported %d of the plan's %d requests%s", id.label(), rep.Lines, plan.Requests, stderrNote(rep.Stderr))
	}
	return nil
}

// lineReader reads a program's standard output under the exec protocol: each request line
// is parsed, checked against the plan (index in range, reported once) and emitted; the
// first violation is kept in protoErr and later lines still count.
type lineReader struct {
	plan     Plan
	emit     func(client.Event)
	seen     []bool
	late     *lateness
	lines    int
	protoErr error
}

func newLineReader(plan Plan, emit func(client.Event)) *lineReader {
	return &lineReader{plan: plan, emit: emit, seen: make([]bool, plan.Requests), late: newLateness(plan)}
}

// read consumes r to its end and returns the scanner's error (a line over 1 MiB, a read
// failure), never a protocol violation.
func (lr *lineReader) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		if err := lr.line(sc.Bytes(), time.Now()); err != nil && lr.protoErr == nil {
			lr.protoErr = fmt.Errorf("stdout line %d: %w", lineNo, err)
		}
	}
	return sc.Err()
}

// line handles one line of output that arrived at the given instant.
func (lr *lineReader) line(b []byte, arrived time.Time) error {
	ev, ok, err := parseLine(b, arrived)
	if err != nil {
		return err
	}
	if !ok {
		return nil // not a request line: an identity line, or output the protocol ignores
	}
	if ev.Seq < 0 || ev.Seq >= lr.plan.Requests {
		return fmt.Errorf("index %d is outside the plan's 0..%d", ev.Seq, lr.plan.Requests-1)
	}
	if lr.seen[ev.Seq] {
		return fmt.Errorf("index %d reported twice", ev.Seq)
	}
	lr.seen[ev.Seq] = true
	lr.lines++
	lr.late.add(b, ev)
	lr.emit(ev)
	return nil
}

// commandLine is what Run starts and where: a bundled adapter's script written into dir
// (or the program Identify built from it, which needs no script), or the user's command.
func commandLine(cfg Config, id Identity, dir string, plan Plan, env []string) (argv []string, workDir string, _ []string, _ error) {
	a := cfg.Adapter
	if a == nil {
		return append([]string{id.Executable}, cfg.Command[1:]...), cfg.Dir, env, nil
	}
	if a.Runtime == "node" && plan.CAFile != "" {
		env = append(env, "NODE_EXTRA_CA_CERTS="+plan.CAFile) // fetch has no per-call CA option
	}
	if id.undici != "" {
		env = append(env, "KALAB_UNDICI="+id.undici)
	}
	if id.libcurl != "" {
		env = append(env, "KALAB_LIBCURL_VERSION="+id.libcurl)
	}
	if id.program != "" {
		return []string{id.program}, dir, env, nil // built before the run (Identify)
	}
	src, err := a.script()
	if err != nil {
		return nil, "", nil, fmt.Errorf("exec: adapter %s: %w", a.Name, err)
	}
	script := filepath.Join(dir, a.Script)
	if err := os.WriteFile(script, src, 0o644); err != nil {
		return nil, "", nil, fmt.Errorf("exec: %w", err)
	}
	return []string{a.Interpreter, script}, dir, env, nil
}

// loopbackURL refuses a target off loopback: a program kalab starts is only ever sent
// to kalab's own link or server.
func loopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[bool]string{false: "80", true: "443"}[u.Scheme == "https"]
	}
	_, err = loopback.Check(net.JoinHostPort(u.Hostname(), port), false)
	return err
}

// started is a running program: its group, the read ends of its output, and its Wait.
type started struct {
	group          *proc.Group
	stdout, stderr *os.File
	waited         chan error // cmd.Wait's result, once the program has exited
}

// start starts cmd in its own group with its output on pipes kalab reads itself (files, so
// that Wait does not wait for copies), and waits for it in the background: when the
// program exits, its group is killed, which closes the pipes any leftover child held.
func start(cmd *exec.Cmd, tmpDir string) (*started, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		// the error returned says what failed
		_ = outR.Close()
		_ = outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	g, err := proc.Start(cmd, tmpDir)
	// the child holds its own copy of the write end
	_ = outW.Close()
	_ = errW.Close()
	if err != nil {
		// the error returned says what failed
		_ = outR.Close()
		_ = errR.Close()
		return nil, err
	}
	st := &started{group: g, stdout: outR, stderr: errR, waited: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		g.Kill()
		st.waited <- err
	}()
	return st, nil
}

// close closes the read ends once both are drained.
func (st *started) close() {
	// drained: closing a read end loses nothing
	_ = st.stdout.Close()
	_ = st.stderr.Close()
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
