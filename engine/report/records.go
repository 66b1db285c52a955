package report

import (
	"encoding/json"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
)

// RecordVersion is the version of the record layout; readers reject other versions.
const RecordVersion = 1

// Statuses of a run or scenario record.
const (
	StatusPass        = "pass"        // every check passed
	StatusFail        = "fail"        // a check failed
	StatusError       = "error"       // the run could not complete (the reason is in Error)
	StatusInterrupted = "interrupted" // stopped by Ctrl-C or SIGTERM; metrics cover what ran
	// StatusNotRun: the run could not run here, because a program it needs (its real
	// client or server, a user command) is not installed; Reason says which and how to
	// install it. It has no verdict: it is neither passed nor failed (see Verdicts).
	StatusNotRun = "not-run"
	// StatusNotEvaluated is a scenario record's status when none of its compare checks
	// failed but some were not evaluated (a run they read did not run or complete).
	StatusNotEvaluated = "not-evaluated"
	// statusSkippedV1 is what kalab wrote for a not-run run before it had StatusNotRun;
	// Read turns it into StatusNotRun.
	statusSkippedV1 = "skipped"
)

// Verdicts of a check (Check.Verdict).
const (
	VerdictPass         = "pass"
	VerdictFail         = "fail"
	VerdictNotEvaluated = "not-evaluated"
)

// Verdicts is the rule every output follows (summary, totals, results.jsonl, JUnit,
// GitHub annotations, the HTML report, the exit code); kalab help verdicts prints it.
const Verdicts = `A check has one of three verdicts:
  pass            it was evaluated and held
  fail            it was evaluated and did not hold
  not evaluated   it could not be evaluated, with the reason: a run it reads did not run
                  (a program it needs is not installed), did not complete (error,
                  interrupted, timing too noisy), was filtered out or is in another shard
A not-evaluated check is never counted or drawn as passed: totals count it apart, the
JSONL record has "pass": false and "not_evaluated": REASON, JUnit marks it skipped, the
HTML report draws it grey with the reason.

A run that could not run here because a program it needs is missing (node, curl, python3
with requests, nginx, haproxy, a client.exec or server.command program not on PATH) has
status not-run, with the reason and how to install the program. It is neither passed nor
failed, and every check that reads it is not evaluated.

Exit codes of kalab run (kalab merge gates merged results the same way, without
--allow-missing):
  0    every planned run ran and every check passed
  1    a check failed, a baseline metric regressed, or (--fail-missing) a run of the
       baseline did not run here (a not-run run counts as missing); this holds even when
       other runs have no verdict, which stderr names
  2    the input is invalid; nothing ran
  3    with no check failed, a run has no verdict: the engine failed, its timing was too
       noisy, or a program it needs is not installed (not-run) - unless --allow-missing
       accepts not-run runs; or a compare check is not evaluated because the machine's
       measured timing could change its verdict; or kalab could not start (too few file
       descriptors, or builtin: scenarios that TMPDIR has no room or no right to hold)
  130  interrupted (kalab's own error, such as results it could not write, is 3 before
       any verdict)
--allow-missing: not-run runs (and the checks that read them) are reported but do not
change the exit code; use it on a machine that lacks some programs on purpose. With
--require-clients a missing real client is an error (exit 3) even with --allow-missing.`

// Check is one evaluated assertion.
type Check struct {
	Kind     string             `json:"kind"` // expect | compare | baseline
	Expr     string             `json:"expr"`
	Pass     bool               `json:"pass"` // evaluated and held; false when not evaluated
	Observed map[string]float64 `json:"observed"`
	Error    string             `json:"error,omitempty"`
	// NotEvaluated, when set, is why the check was not evaluated (a run it reads did not
	// run or complete); Pass is then false.
	NotEvaluated string `json:"not_evaluated,omitempty"`
	// Why says, for a compare check that failed, what the values it read were held to that
	// Observed does not show (plan_reaches: the outcomes the plan reaches).
	Why string `json:"why,omitempty"`
	// Skipped is how records before not_evaluated marked a check that was not evaluated
	// (with "pass": true); Read turns it into NotEvaluated. kalab no longer writes it.
	Skipped bool   `json:"skipped,omitempty"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
}

// Verdict is the check's verdict: VerdictPass, VerdictFail or VerdictNotEvaluated.
func (c Check) Verdict() string {
	switch {
	case c.NotEvaluated != "" || c.Skipped:
		return VerdictNotEvaluated
	case c.Pass:
		return VerdictPass
	}
	return VerdictFail
}

// Failed reports whether the check was evaluated and did not hold.
func (c Check) Failed() bool { return c.Verdict() == VerdictFail }

// upgrade turns what older records wrote for a check that was not evaluated into the
// current form.
func (c *Check) upgrade() {
	if c.Skipped {
		c.Skipped, c.Pass = false, false
		if c.NotEvaluated = c.Error; c.NotEvaluated == "" {
			c.NotEvaluated = "a run it reads did not run or complete"
		}
		c.Error = ""
	}
}

// Upgrade turns what older kalab versions wrote into the current form: the status
// "skipped" into not-run, and checks marked skipped into not evaluated. Readers of
// results.jsonl call it on every record.
func (r *Run) Upgrade() {
	if r.Status == statusSkippedV1 {
		r.Status = StatusNotRun
	}
	for i := range r.Checks {
		r.Checks[i].upgrade()
	}
}

// Upgrade turns checks marked skipped by older kalab versions into not evaluated, and
// recomputes a status older versions wrote as pass over checks not evaluated.
func (s *Scenario) Upgrade() {
	for i := range s.Checks {
		s.Checks[i].upgrade()
	}
	if s.Status == StatusPass {
		s.Status = ScenarioStatus(s.Checks)
	}
}

// ScenarioStatus is the status of a scenario record over its compare checks: fail when
// one failed, else not-evaluated when one was not evaluated, else pass.
func ScenarioStatus(cs []Check) string {
	st := StatusPass
	for _, c := range cs {
		switch c.Verdict() {
		case VerdictFail:
			return StatusFail
		case VerdictNotEvaluated:
			st = StatusNotEvaluated
		}
	}
	return st
}

// Run is one line of results.jsonl: the outcome of one scenario x variant.
type Run struct {
	Record        string            `json:"record"` // "run"
	RecordVersion int               `json:"record_version"`
	KalabVersion  string            `json:"kalab_version"`
	RunID         string            `json:"run_id"`
	Scenario      string            `json:"scenario"`
	File          string            `json:"file"`
	Variant       string            `json:"variant"`
	Matrix        map[string]string `json:"matrix,omitempty"`
	Params        json.RawMessage   `json:"params"` // the resolved settings, in scenario time
	TimeScale     float64           `json:"time_scale"`
	Clock         string            `json:"clock,omitempty"` // virtual or real; empty in records from before the virtual clock (real)
	Seed          int64             `json:"seed"`
	StartedAt     time.Time         `json:"started_at"`
	WallMs        float64           `json:"wall_ms"`  // real time the run took (not scaled)
	ModelMs       float64           `json:"model_ms"` // the time the run spanned on its own clock, scenario ms, setup and teardown included: simulated on the virtual clock, wall_ms over the time scale on the real one; 0 if it did not start
	Status        string            `json:"status"`
	Error         string            `json:"error,omitempty"`
	Reason        string            `json:"reason,omitempty"` // why a run did not run (not-run), and how to install what it needs
	Notes         []string          `json:"notes,omitempty"`  // how the run differs from what the file asked, and why; a program version its preset was not verified against
	// Client identifies the real client program of an exec run; nil for kalab's own clients.
	Client       *ClientRuntime `json:"client,omitempty"`
	Metrics      check.Metrics  `json:"metrics"`
	Checks       []Check        `json:"checks"`
	RequestsFile string         `json:"requests_file,omitempty"` // relative to the run directory
	// ConnectionsFile holds one Conn line per connection (relative to the run directory).
	ConnectionsFile string `json:"connections_file,omitempty"`
	// Closes counts the run's connection closes by who closed and why, e.g.
	// {"server": {"idle": 97, "end": 3}, "client": {"end": 1}}; nil when not recorded.
	Closes map[string]map[string]int `json:"closes,omitempty"`
	// Server names the server the run talked to.
	Server *Server `json:"server,omitempty"`
	// Baseline is how the run compared with a baseline (kalab run --baseline); nil without one.
	Baseline *BaselineRef `json:"baseline,omitempty"`
	// Timing is how late the run's timers fired and whether that was inside what its
	// checks can tolerate; nil for a run that did not start.
	Timing *Timing `json:"timing,omitempty"`
	// Hops are the parts of the run's path, the client first: who each is and what it
	// counted; nil for a run that did not start.
	Hops []Hop `json:"hops,omitempty"`
	// Predicted is what the plan alone predicts of the run's counts (engine/oracle) beside
	// what it measured; nil for a run that gave no verdict or wrote no prediction.
	Predicted *Predicted `json:"predicted,omitempty"`
	// Replay is what a run of load.replay read of its recording; nil for other runs.
	Replay *Replay `json:"replay,omitempty"`

	line int // the line it was read from, for messages about a file
}

// Line is the line of results.jsonl the record was read from, for messages about the file;
// 0 for a record that was not read from one.
func (r *Run) Line() int { return r.line }

// Replay is what a replay run read: lines (a HAR file's entries), the requests it sent,
// the distinct clients (one connection pool each), and every line it could not read,
// counted, the first of them kept with their numbers and why.
type Replay struct {
	File     string `json:"file"`
	Format   string `json:"format"`
	Lines    int    `json:"lines"`
	Requests int    `json:"requests"`
	Skipped  int    `json:"skipped"` // outside the window or of a client not sampled
	Late     int    `json:"late"`    // further out of order than the reorder window
	// Clients counts the distinct clients, exactly up to 65,536; ClientsCapped says there
	// were more (Clients is then a lower bound: the set that counts them is bounded).
	Clients       int  `json:"clients"`
	ClientsCapped bool `json:"clients_capped,omitempty"`
	// PoolsOpened counts the pools built (a client whose pool was dropped and who came
	// back counts again), PeakPools the most open at once, PoolsDropped the pools closed
	// after their client idled past the client's idle timeout (plus a second).
	PoolsOpened  int       `json:"pools_opened"`
	PeakPools    int       `json:"peak_pools"`
	PoolsDropped int       `json:"pools_dropped"`
	BadLines     int       `json:"bad_lines"`
	FirstBad     []BadLine `json:"first_bad"`
}

// BadLine is a line of a recording that could not be read, and why.
type BadLine struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Predicted is the oracle's account of a run: each count the plan predicts, beside the
// measured value. A count the plan does not fix is listed as not predicted, with why.
type Predicted struct {
	// Rule is the model that applied: sequential, batches, no-reuse, or empty.
	Rule string `json:"rule,omitempty"`
	// LatenessMs is the lateness, in scenario milliseconds, the bounds allow for: the sum of
	// the p99 lateness of the run's link, schedule and idle-close timers, divided by the
	// time scale. A pause within it of a window edge may count on either side.
	LatenessMs float64 `json:"lateness_ms"`
	// Disagreement is true when a predicted count was measured outside its bounds: the
	// model of the run's parts and the parts themselves disagree (see Verdicts). It does
	// not change the run's status.
	Disagreement bool             `json:"disagreement"`
	Reason       string           `json:"reason,omitempty"` // the counts that disagree
	Counts       []PredictedCount `json:"counts"`
}

// PredictedCount is one count of a Predicted.
type PredictedCount struct {
	Metric    string  `json:"metric"`
	Predicted bool    `json:"predicted"`
	Value     int     `json:"value"`             // the plan's count with every timer on time
	Lo        int     `json:"lo"`                // the bounds at the run's lateness
	Hi        int     `json:"hi"`                //
	AtMost    bool    `json:"at_most,omitempty"` // Value is an upper bound (scheduling can only lower it)
	Measured  float64 `json:"measured"`
	Verdict   string  `json:"verdict"` // agree | disagree | not-predicted
	Reason    string  `json:"reason"`  // the rule, or why the count is not predicted
	Window    string  `json:"window,omitempty"`
	Requests  []int   `json:"requests,omitempty"`  // the requests (seq) the rule puts in the count
	Uncertain []int   `json:"uncertain,omitempty"` // requests whose pause is within the lateness of an edge
}

// Verdicts of a predicted count (PredictedCount.Verdict).
const (
	ModelAgree        = "agree"
	ModelDisagree     = "disagree"
	ModelNotPredicted = "not-predicted"
)

// Hop is one part of a run's path (client, link, balancer, backend link, server, a
// middlebox): its identity and its own counters, under the metric vocabulary's names.
type Hop struct {
	Role     string             `json:"role"`
	Kind     string             `json:"kind,omitempty"`
	Name     string             `json:"name,omitempty"`
	Program  string             `json:"program,omitempty"`
	Version  string             `json:"version,omitempty"`
	Verified bool               `json:"verified"`
	Timing   []string           `json:"timing,omitempty"` // the timing sources its timers report to
	Stats    map[string]float64 `json:"stats"`
}

// Timing is a run's account of its own timing (README "Runs that know when they are
// wrong"). Times are milliseconds of real time, as the machine had to keep them.
type Timing struct {
	// Sources holds each timer source's lateness and tolerance: link, schedule, idle_close,
	// sched, and for a real client program, program.
	Sources map[string]TimingSource `json:"sources"`
	// Noisy is true when a source's p99 lateness exceeded its tolerance: the run's checks
	// were not evaluated, because its timing was not the scenario's.
	Noisy bool `json:"noisy"`
	// Reason says which source was over and by how much, when Noisy.
	Reason string `json:"reason,omitempty"`
	// Attempt is 1 for a run's first attempt; a run rerun alone after noisy attempts
	// carries their reasons in Reruns.
	Attempt int      `json:"attempt"`
	Reruns  []string `json:"reruns,omitempty"`
	// CPUPressure is the share of the run's wall time (0 to 1) in which some task on the
	// machine was ready to run but waited for a CPU (Linux pressure stall information,
	// /proc/pressure/cpu "some"), the run's own work included; absent where the system does
	// not say. Recorded, not judged: it stretches computing no timer sees.
	CPUPressure *float64 `json:"cpu_pressure,omitempty"`
	// CPUWaitMs is how long, in real milliseconds, this process's threads were ready to
	// run during the run but waited for a core (Linux schedstat run-queue delay, plus the
	// process's share of hypervisor steal); absent where the system does not say.
	CPUWaitMs *float64 `json:"cpu_wait_ms,omitempty"`
	// CPUWaitNeighboursMs is the part of CPUWaitMs the machine's other processes caused
	// (lag.CPUWait.Split: the threads' delay times the others' share of the machine's busy
	// CPU, plus steal); the rest is kalab's threads queueing behind each other, which a run
	// has alone too. All of CPUWaitMs when the run was beside other runs (BesideOtherRuns).
	CPUWaitNeighboursMs *float64 `json:"cpu_wait_neighbours_ms,omitempty"`
	// BesideOtherRuns is true when another run was in flight in this kalab process during
	// the run: the process's threads then include that run's, so what they waited for a core
	// is all counted as others' (CPUWaitNeighboursMs equals CPUWaitMs) rather than split off
	// as this run's own.
	BesideOtherRuns bool `json:"beside_other_runs,omitempty"`
	// RunQueueMs is how long kalab's threads waited for a core on average each time they
	// got one during the run (lag.RunQueue). Its neighbours' part (times
	// CPUWaitNeighboursMs over CPUWaitMs) over the wake-ups no timer measures a request waits
	// through in turn (2 x LinkTrips + 1) is what other processes could have added to a request: a latency
	// check this could move past its bound is not judged (the CPU-pressure rule per check).
	RunQueueMs *float64 `json:"run_queue_ms,omitempty"`
	// LatencyFloorMs is the least any request of the run can take in the model, in
	// scenario milliseconds: one round trip of its link (a request crosses it there and
	// back, whatever else it waits on); absent without a link. Lateness and CPU wait only
	// add to a latency, so the model's value of one lies between this floor and the
	// observed value: the CPU-pressure rule and the compare margins never take a latency
	// below it.
	LatencyFloorMs *float64 `json:"latency_floor_ms,omitempty"`
	// LinkTrips is how many of the link's delayed one-way trips a request can wait on in
	// turn (3 for a new plain connection, 5 with TLS 1.3, 7 with TLS 1.2); absent without a
	// link. Against a baseline, the extra wait per request and the extra link lateness
	// times these trips are what a busier machine could add to a request: a time metric's
	// regression inside that makes the run noisy (machineShift in engine/report/baseline).
	LinkTrips int `json:"link_trips,omitempty"`
	// ServerCPUWaitMs is how long, in real milliseconds, a real server program's threads
	// (every process of its group) were ready to run during the run but waited for a core
	// (lag.GroupWait); ServerCPUWaitNeighboursMs the part the machine's other processes
	// caused (neither the program's nor kalab's CPU). Absent for an embedded server, a URL,
	// and where the system does not say.
	ServerCPUWaitMs           *float64 `json:"server_cpu_wait_ms,omitempty"`
	ServerCPUWaitNeighboursMs *float64 `json:"server_cpu_wait_neighbours_ms,omitempty"`
	// TimerRanges holds, for each metric a timer that no timing source watches produced (a
	// real server's own idle close, the counts a paced accept loop decides), how far the
	// CPU other processes took could have moved it, in the metric's unit: a check that
	// reads it is evaluated over that range, and one whose verdict could change there has
	// none (the CPU-pressure rule for real timers, engine/judge/realtimers.go).
	TimerRanges map[string]TimerRange `json:"timer_ranges,omitempty"`
	// Slack is how much longer than the plan the run took around each of its requests,
	// kept for a compare's plan_reaches when this run is the one it weighs; absent
	// otherwise.
	Slack *Slack `json:"slack,omitempty"`
}

// TimerRange is how far the CPU other processes took could have moved one metric: down
// (the timer fired later, so the model's value may be lower) and up, and the timer and
// figures that say so.
type TimerRange struct {
	Down float64 `json:"down"`
	Up   float64 `json:"up"`
	By   string  `json:"by"`
}

// Slack is a real-clock run's own time beyond its plan, in scenario milliseconds, by
// request sequence number: BeforeMs[n] from the end of the response before request n (and
// of the pause, when it opens a burst) to its start, below zero when a pause ended early;
// DuringMs[n] beyond the round trips the plan gives it (one for a reused connection, the
// connect's and TLS's more for a new one; for a failed request, beyond one round trip),
// never below zero. MarginMs widens each gap's range both
// ways: the clocks' precision when the edge rule judged the run's timers request by request
// (a run whose timers could have moved a request across an edge is noisy, and rerun), else
// the timers' p99 lateness (link, schedule and idle close, summed).
type Slack struct {
	BeforeMs []float64 `json:"before_ms"`
	DuringMs []float64 `json:"during_ms"`
	MarginMs float64   `json:"margin_ms"`
}

// TimingSource is one timer source's lateness in real milliseconds.
type TimingSource struct {
	N    uint64  `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms,omitempty"`
	// ToleranceMs is the p99 lateness the run's verdicts can absorb, when its p99 is
	// judged (Limits has every judged statistic); absent when none is.
	ToleranceMs *float64 `json:"tolerance_ms,omitempty"`
	// Limits are the statistics of this source the run was judged on, each with its
	// tolerance and the check that set it; absent when no check depends on this source.
	Limits []TimingLimit `json:"limits,omitempty"`
}

// TimingLimit is one judged statistic of a timer source's lateness.
type TimingLimit struct {
	Stat        string  `json:"stat"` // p50, p99, max or mean
	ToleranceMs float64 `json:"tolerance_ms"`
	SetBy       string  `json:"set_by"` // the metric and check (or baseline) that set it
}

// ClientRuntime is the real program that was the client of a run.
type ClientRuntime struct {
	Adapter    string   `json:"adapter,omitempty"` // bundled adapter name; empty for the user's command
	Command    []string `json:"command"`
	Executable string   `json:"executable"`        // the runtime, resolved on PATH
	Version    string   `json:"version,omitempty"` // what the runtime says of itself
	Stderr     string   `json:"stderr,omitempty"`  // its standard error, relative to the run directory
}

// BaselineRef records how a run compared with the baseline it was run against. Each
// regressed metric is also a failed check of kind "baseline" in the run's Checks.
type BaselineRef struct {
	File      string   `json:"file"`             // the baseline results.jsonl
	RunID     string   `json:"run_id,omitempty"` // the baseline run compared with; empty when new
	State     string   `json:"state"`            // compared | new | not-comparable
	Note      string   `json:"note,omitempty"`   // e.g. a time scale that differs from the baseline
	Regressed []string `json:"regressed,omitempty"`
	Improved  []string `json:"improved,omitempty"`
}

// Scenario is the line written after the last run of a scenario: its compare checks.
type Scenario struct {
	Record        string  `json:"record"` // "scenario"
	RecordVersion int     `json:"record_version"`
	KalabVersion  string  `json:"kalab_version"`
	RunID         string  `json:"run_id"`
	Scenario      string  `json:"scenario"`
	File          string  `json:"file"`
	Runs          int     `json:"runs"`
	Status        string  `json:"status"`
	Checks        []Check `json:"checks"`
}

// Request is one line of requests/<scenario>/<variant>.jsonl. Times are milliseconds in
// scenario time.
type Request struct {
	Seq           int     `json:"seq"`
	StartMs       float64 `json:"start_ms"` // from the start of the run
	LatencyMs     float64 `json:"latency_ms"`
	Conn          uint64  `json:"conn"`
	Reused        bool    `json:"reused"`
	Attempts      int     `json:"attempts"`
	HiddenRetries int     `json:"hidden_retries,omitempty"`
	Status        int     `json:"status"`
	Bytes         int64   `json:"bytes"`
	Class         string  `json:"class,omitempty"`
	Error         string  `json:"error,omitempty"`
	Code          string  `json:"code,omitempty"` // the runtime's own error code (exec clients)
	ConnectMs     float64 `json:"connect_ms,omitempty"`
	TLSMs         float64 `json:"tls_ms,omitempty"`
	FirstByteMs   float64 `json:"first_byte_ms,omitempty"`
	// ScheduledMs is when the schedule planned the request to start, from the start of the
	// run; QueueWaitMs is how much later the client really began it. Both are set for
	// every request a schedule planned (0 is a value: a request on time has a queue wait
	// of 0), nil for one it did not (a real client program's own loop).
	ScheduledMs *float64 `json:"scheduled_ms,omitempty"`
	QueueWaitMs *float64 `json:"queue_wait_ms,omitempty"`
	// ServerConn is the server's id of the connection the request rode (the embedded
	// server's Kalab-Conn header; for a failed request, what earlier responses on the same
	// client connection said). 0 when unknown.
	ServerConn uint64 `json:"server_conn,omitempty"`
	// ServerClosedMs is, for a failed request, when the server had closed ServerConn
	// (from the start of the run), and ServerCloseReason why: the stale-connection race
	// shows as a reset a fraction of a round trip after an idle close.
	ServerClosedMs    *float64 `json:"server_closed_ms,omitempty"`
	ServerCloseReason string   `json:"server_close_reason,omitempty"`
	// Set when the request crossed a balancer: its id of the backend connection of the
	// final attempt, the attempts it made there, and whether that connection was reused.
	BackendConn     uint64 `json:"backend_conn,omitempty"`
	BackendAttempts int    `json:"backend_attempts,omitempty"`
	BackendReused   bool   `json:"backend_reused,omitempty"`
	// Client is, in a replay run, the recorded client that sent the request (its address
	// or key in the recording): each has its own connection pool.
	Client string `json:"client,omitempty"`
}

// Who closed a connection (Conn.ClosedBy).
const (
	ClosedByServer   = "server"
	ClosedByClient   = "client"
	ClosedByBalancer = "balancer" // the balancer closed a client connection (side "balancer")
)

// Where a connection was observed (Conn.Side).
const (
	SideServer   = "server"
	SideProxy    = "proxy"
	SideBalancer = "balancer"
)

// Conn is one line of connections/<scenario>/<variant>.jsonl: one connection as one side
// of it saw it. Times are milliseconds in scenario time from the start of the run. The
// type is shared by every observer (the embedded server today; a proxy watching a real
// server's side, or a client, can write the same record with its own Side).
type Conn struct {
	Record string `json:"record"` // "conn"
	// Side is where the connection was observed: "server" (the embedded server),
	// "proxy" (the latency proxy's upstream side), "balancer" (the balancer's side of the
	// client's connections; IDs in accept order) or "client".
	Side string `json:"side"`
	// ID is the observer's id of the connection (for the embedded server, the value of
	// its Kalab-Conn response header).
	ID uint64 `json:"id"`
	// ClientConn is the client's id of the same connection (Request.Conn), 0 when no
	// response told the client which connection it was.
	ClientConn uint64   `json:"client_conn,omitempty"`
	OpenedMs   float64  `json:"opened_at_ms"`
	ClosedMs   *float64 `json:"closed_at_ms,omitempty"` // nil: still open when the run's records were written
	ClosedBy   string   `json:"closed_by,omitempty"`    // server | client | balancer
	// Reason: idle, max_requests, close_every, requested (the request asked for
	// Connection: close), error, end (the run ended) or unknown (the peer closed it and
	// the observer cannot tell why).
	Reason   string `json:"reason,omitempty"`
	Requests int64  `json:"requests"` // requests the observer saw on it
	// IdleMs is how long the connection had been idle when it closed, where the observer
	// can tell (the proxy: since the server's last byte for a server's close, since the
	// last byte either way for a client's).
	IdleMs *float64 `json:"idle_ms,omitempty"`
	// BytesUp and BytesDown are the bytes the proxy delivered to the server and to the
	// client (side "proxy" only).
	BytesUp   int64 `json:"bytes_up,omitempty"`
	BytesDown int64 `json:"bytes_down,omitempty"`
	// FailedAttempt: after the server closed the connection the client wrote a request
	// into it, which never reached the server (side "proxy" only).
	FailedAttempt bool `json:"failed_attempt,omitempty"`
}

// Virtual reports whether r ran on the virtual clock: its time is simulated, so nothing
// the machine did can have moved it, and no judge of the machine reads it.
func (r *Run) Virtual() bool { return r.Clock == "virtual" }

// ClockName is the clock that ran r: "virtual" or "real" (a record from before the virtual
// clock names none, and ran real).
func (r *Run) ClockName() string {
	if r.Clock == "" {
		return "real"
	}
	return r.Clock
}
