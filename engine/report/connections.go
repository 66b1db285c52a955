package report

import "path/filepath"

// Server names the server of a run: kalab's embedded server or a real program.
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

// ServerLogsPath is the directory that keeps a real server's logs, relative to the run
// directory.
func ServerLogsPath(scenario, variant string) string {
	return filepath.Join("servers", SafeName(scenario), SafeName(variant))
}

// Subdir creates a directory under the run directory (rel is relative to it) and returns
// its path. It never recreates a run directory that was removed while kalab ran.
func (w *Writer) Subdir(rel string) (string, error) {
	dir := filepath.Join(w.Dir, rel)
	if err := w.mkdirIn(dir); err != nil {
		return "", err
	}
	return dir, nil
}
