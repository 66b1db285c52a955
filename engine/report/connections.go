package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Server names the server of a run: kalab's embedded one or a real program.
type Server struct {
	Kind    string `json:"kind"` // embedded | nginx | node | haproxy | command | url
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Program string `json:"program,omitempty"` // the executable or command started
	URL     string `json:"url,omitempty"`     // where the proxy forwarded to
	// ServerHeader is the Server header of a probe request sent before the run.
	ServerHeader string `json:"server_header,omitempty"`
	// Logs are the server's generated configuration and logs, relative to the run directory.
	Logs []string `json:"logs,omitempty"`
}

// Connection is one line of connections/<scenario>/<variant>.jsonl: one link of the run's
// proxy as its upstream side saw it, and how it ended. Times are milliseconds in scenario
// time from the start of the run; idle_ms is a duration.
type Connection struct {
	Record      string  `json:"record"` // "connection"
	Conn        uint64  `json:"conn"`   // the proxy's link number, in accept order from 1
	OpenedMs    float64 `json:"opened_ms"`
	ConnectedMs float64 `json:"connected_ms,omitempty"` // upstream connected; absent if never
	// ClosedBy is the side whose FIN or reset reached the proxy first: server, client, or
	// kalab (the run ended with the connection open).
	ClosedBy string `json:"closed_by"`
	// Reason: idle, after-response (a FIN straight after the server's last byte), reset,
	// refused or run-end.
	Reason   string   `json:"reason"`
	ClosedMs float64  `json:"closed_ms"`
	IdleMs   *float64 `json:"idle_ms,omitempty"` // idle before the close (see netsim.ConnRecord.Idle)
	EndedMs  float64  `json:"ended_ms"`
	BytesUp  int64    `json:"bytes_up"`
	BytesDn  int64    `json:"bytes_down"`
}

// ConnectionsPath is the connections file of a run, relative to the run directory.
func ConnectionsPath(scenario, variant string) string {
	return filepath.Join("connections", SafeName(scenario), SafeName(variant)+".jsonl")
}

// ServerLogsPath is the directory that keeps a real server's logs, relative to the run
// directory.
func ServerLogsPath(scenario, variant string) string {
	return filepath.Join("servers", SafeName(scenario), SafeName(variant))
}

// WriteConnections writes a run's connection records in one go.
func (w *Writer) WriteConnections(scenario, variant string, conns []Connection) error {
	dir, err := w.Subdir(filepath.Dir(ConnectionsPath(scenario, variant)))
	if err != nil {
		return fmt.Errorf("create connections directory: %w", err)
	}
	p := filepath.Join(dir, SafeName(variant)+".jsonl")
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("create connections file: %w", err)
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	for i := range conns {
		conns[i].Record = "connection"
		if err = enc.Encode(&conns[i]); err != nil {
			break
		}
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write connection records: %w", err)
	}
	return nil
}

// Subdir creates a directory under the run directory (rel is relative to it) and returns
// its path. It never recreates a run directory that was removed while kalab ran: the
// results are gone, and writing part of them again would pass for a whole.
func (w *Writer) Subdir(rel string) (string, error) {
	if st, err := os.Stat(w.Dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("the results directory %s is gone", w.Dir)
	}
	dir := filepath.Join(w.Dir, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}
