package realserver

import (
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/server"
)

// checkEvents refuses an event kalab cannot give the real server: only nginx's reload and
// its graceful shutdown, each at a time.
//
// A reload is nginx -s reload (SIGHUP): the master starts new workers and the old ones
// close their idle connections and answer what is in flight with "Connection: close".
// A drain is nginx -s quit (SIGQUIT): the master tells its workers to shut down, closes
// its own listening sockets and exits once the last worker has (src/os/unix/
// ngx_process_cycle.c, ngx_master_process_cycle, the ngx_quit block); each worker calls
// ngx_close_listening_sockets and then ngx_close_idle_connections (ngx_worker_process_cycle,
// its ngx_quit block), so a later connect is refused. nginx 1.22.1 here closed an idle
// connection, refused connects and exited (status 0) within 4 ms of the signal. nginx has no grace per signal: worker_shutdown_timeout is the
// configuration's, and without it a worker waits for its requests to finish, which is a
// drain with no grace.
func checkEvents(cfg Config) error {
	drainAt := time.Duration(-1)
	for _, e := range cfg.Events {
		switch {
		case cfg.Kind != Nginx:
			return unsupported(cfg.Kind, "Events", "kalab reloads or stops only nginx during a run (nginx -s reload, nginx -s quit); %s has no event", cfg.Kind)
		case e.Kind != server.EventGoAway && e.Kind != server.EventDrain:
			return unsupported(Nginx, "Events", "nginx takes a reload (do: goaway, nginx -s reload) or a drain (do: drain, nginx -s quit) during a run, not a %s", e.Kind)
		case e.AfterRequests > 0:
			return unsupported(Nginx, "Events", "kalab cannot count nginx's requests as they come: give the %s a time (at), not after_requests", e.Kind)
		case e.Grace > 0:
			return unsupported(Nginx, "Events", "nginx -s quit has no grace of its own (worker_shutdown_timeout is nginx's configuration): give the drain no grace")
		case e.Kind == server.EventDrain && (drainAt < 0 || e.At < drainAt):
			drainAt = e.At
		}
	}
	for _, e := range cfg.Events {
		if drainAt >= 0 && e.At > drainAt {
			return unsupported(Nginx, "Events", "nginx exits after a drain (nginx -s quit): no event can follow it")
		}
	}
	return nil
}

// signalOf is the signal that gives nginx the event e: SIGQUIT for a drain (nginx -s
// quit), SIGHUP for a reload (nginx -s reload).
func signalOf(e server.Event) syscall.Signal {
	if e.Kind == server.EventDrain {
		return syscall.SIGQUIT
	}
	return syscall.SIGHUP
}

// ArmEvents starts the events' timers from t0, the instant the run's load starts; each
// records how late it signalled in rec. After a drain nginx's master exits on its own:
// Close then finds it gone and has nothing to stop.
func (s *Server) ArmEvents(t0 time.Time, rec *lag.Recorder) {
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	if s.closed || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	proc := s.cmd.Process
	for _, e := range s.cfg.Events {
		due := t0.Add(e.At)
		sig := signalOf(e)
		s.timers = append(s.timers, time.AfterFunc(time.Until(due), func() {
			rec.Since(due)
			_ = proc.Signal(sig) // an exited nginx shows in the run
		}))
	}
}

// stopEvents stops the events not yet signalled; Close calls it first.
func (s *Server) stopEvents() {
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	s.closed = true
	for _, t := range s.timers {
		t.Stop()
	}
}
