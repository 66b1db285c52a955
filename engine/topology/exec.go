package topology

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/report"
)

// Exec is what a run with a real client program carries through drive.
type Exec struct {
	Config execclient.Config
	ID     execclient.Identity
	rep    execclient.Report
	stderr string // where its standard error was kept, relative to the run directory
}

// RuntimeRecord is the run record's view of the program.
func (x *Exec) RuntimeRecord() *report.ClientRuntime {
	return &report.ClientRuntime{Adapter: x.ID.Adapter, Command: x.ID.Command, Executable: x.ID.Executable, Version: x.ID.Version, Stderr: x.stderr}
}

// serverLog counts, at the server, each request by the index its client put in the
// Kalab-Request header, so that a request the client sent twice but reported once (a
// hidden re-send) shows, and counts requests that came on a reused connection.
type serverLog struct {
	mu       sync.Mutex
	byIndex  map[int]int
	untagged int
	reused   int
}

func newServerLog() *serverLog { return &serverLog{byIndex: map[int]int{}} }

func (l *serverLog) observe(r *http.Request, _, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > 1 {
		l.reused++
	}
	i, err := strconv.Atoi(r.Header.Get(execclient.RequestHeader))
	if err != nil {
		l.untagged++
		return
	}
	l.byIndex[i]++
}

// seen is how many requests reached the server.
func (l *serverLog) seen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.untagged
	for _, c := range l.byIndex {
		n += c
	}
	return n
}

// hiddenResends is how many requests the server received beyond one per index. Without
// index headers (a program that does not send them) it is what the server received
// beyond the responses the program reported.
func (l *serverLog) hiddenResends(answered int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	extra := 0
	for _, c := range l.byIndex {
		extra += c - 1
	}
	if len(l.byIndex) == 0 {
		extra = max(0, l.untagged-answered)
	}
	return extra
}

// runExec runs the program through the plan, feeding each reported request to record.
func runExec(ctx context.Context, x *Exec, url string, caPEM []byte, record func(client.Event)) error {
	x.Config.URL, x.Config.CAPEM = url, caPEM
	rep, err := execclient.Run(ctx, x.Config, x.ID, record)
	x.rep = rep
	if err != nil {
		return fmt.Errorf("exec client: %w", err)
	}
	return nil
}

// cpuPerRequest and peakRSS describe the program, not kalab, in an exec run.
func (x *Exec) usage(requests int) (cpuUs float64, rssMB float64) {
	if requests > 0 {
		cpuUs = float64(x.rep.CPU/time.Microsecond) / float64(requests)
	}
	return cpuUs, float64(x.rep.MaxRSS) / (1 << 20)
}

// ProgramLag records how late the program began its requests (execclient.Report.Late) as
// the run's program timing source; execute calls it once the program has run, before the
// run's timing is judged.
func (x *Exec) ProgramLag(tm *judge.Timers) {
	for _, d := range x.rep.Late {
		tm.Program.Add(d)
	}
}
