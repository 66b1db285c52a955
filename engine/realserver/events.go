package realserver

import (
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/server"
)

// checkEvents refuses an event kalab cannot give the real server: only nginx's reload at a
// time (nginx -s reload; the master starts new workers and the old ones close their idle
// connections and answer what is in flight with "Connection: close", the same path as
// nginx -s quit: src/os/unix/ngx_process_cycle.c, ngx_worker_process_cycle, the ngx_quit
// block calling ngx_close_idle_connections).
func checkEvents(cfg Config) error {
	for _, e := range cfg.Events {
		switch {
		case cfg.Kind != Nginx:
			return unsupported(cfg.Kind, "Events", "kalab reloads only nginx during a run (nginx -s reload); %s has no event", cfg.Kind)
		case e.Kind != server.EventGoAway:
			return unsupported(Nginx, "Events", "nginx takes a reload (do: goaway, nginx -s reload) during a run, not a %s", e.Kind)
		case e.AfterRequests > 0:
			return unsupported(Nginx, "Events", "kalab cannot count nginx's requests as they come: give the reload a time (at), not after_requests")
		}
	}
	return nil
}

// ArmEvents starts the reloads' timers from t0, the instant the run's load starts; each
// records how late it signalled in rec.
func (s *Server) ArmEvents(t0 time.Time, rec *lag.Recorder) {
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	if s.closed || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	proc := s.cmd.Process
	for _, e := range s.cfg.Events {
		due := t0.Add(e.At)
		s.timers = append(s.timers, time.AfterFunc(time.Until(due), func() {
			rec.Since(due)
			_ = proc.Signal(syscall.SIGHUP) // nginx -s reload; an exited nginx shows in the run
		}))
	}
}

// stopEvents stops the reloads not yet signalled; Close calls it first.
func (s *Server) stopEvents() {
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	s.closed = true
	for _, t := range s.timers {
		t.Stop()
	}
}
