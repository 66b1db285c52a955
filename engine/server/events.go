package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
)

// The kinds of Event: what a deploy does to a running server.
const (
	// EventGoAway is a graceful reload (nginx -s reload, a new process taking the listener):
	// every open connection is told to go, and new connections are served. Over HTTP/1.1
	// idle connections close at once and a response in flight carries "Connection: close";
	// over HTTP/2 each connection gets a GOAWAY whose last stream id is the highest the
	// server has seen, and a stream that arrives after it is discarded, as net/http's
	// HTTP/2 server does (h2_bundle.go, processFrame: "Discard frames for streams
	// initiated after the identified last stream sent in a GOAWAY").
	EventGoAway = "goaway"
	// EventDrain is a graceful shutdown (Go's Server.Shutdown, nginx -s quit, Node's
	// server.close()): the same as EventGoAway, but the listener closes, so a later
	// connect is refused; a connection still open Grace after the event is closed. Go's
	// Shutdown closes its listeners first (src/net/http/server.go, Shutdown: "first
	// closing all open listeners"), and so does each nginx worker on quit
	// (src/os/unix/ngx_process_cycle.c, ngx_worker_process_cycle: ngx_quit calls
	// ngx_close_listening_sockets, then ngx_close_idle_connections).
	EventDrain = "drain"
	// EventRestart is a crash or a kill and a restart: every connection closes at once and
	// so does the listener (a dead process listens on nothing: a connect is refused) for
	// Gap; then the server listens again on the same address and serves.
	EventRestart = "restart"
	// EventDeregister is the backend taken out of the balancer in front of it during a
	// rolling deploy (deregister.go): a new target takes every new connection while the old
	// one keeps its open connections until its deregistration delay (Grace) ends, or until
	// it has none left; then it is stopped and closes what remains.
	EventDeregister = "deregister"
)

// Event is a change the server goes through during a run.
type Event struct {
	// At is when it happens, after the instant ArmEvents is given; ignored when AfterRequests is set.
	At time.Duration
	// AfterRequests, when set, makes it happen as the handler finishes this many requests
	// (counted across connections): that request's response is the last on its connection.
	AfterRequests int64
	// Kind is EventGoAway, EventDrain, EventRestart or EventDeregister.
	Kind string
	// Grace is how long a drain lets open connections finish before it closes them; 0 closes
	// them when their requests are done and no later. For a deregister it is the balancer's
	// deregistration delay: 0 stops the old target at once.
	Grace time.Duration
	// Gap is how long a restart serves no connection.
	Gap time.Duration
}

// The close reasons of connections an event ended (ConnRecord.Reason).
const (
	ReasonGoAway  = EventGoAway
	ReasonDrain   = EventDrain
	ReasonRestart = EventRestart
	// ReasonDeregister: the old target of a deregistration was stopped with the connection open.
	ReasonDeregister = EventDeregister
)

// checkEvents rejects an event the server cannot carry out.
func (cfg Config) checkEvents() error {
	for i, e := range cfg.Events {
		switch {
		case e.Kind != EventGoAway && e.Kind != EventDrain && e.Kind != EventRestart && e.Kind != EventDeregister:
			return fmt.Errorf("event %d: kind %q: want %s, %s, %s or %s", i+1, e.Kind, EventGoAway, EventDrain, EventRestart, EventDeregister)
		case e.At < 0 || e.AfterRequests < 0 || e.Grace < 0 || e.Gap < 0:
			return fmt.Errorf("event %d: a negative time or count", i+1)
		}
	}
	return nil
}

// generation is one http.Server serving the listener: the first, or the one a reload or a
// restart started. Its connections carry its retirement's reason when they close.
type generation struct {
	srv    *http.Server
	ln     *handoff
	reason atomic.Value // string: the event that retired it; unset while it serves
	open   atomic.Int64 // its connections open now
	// deregistering is set while a deregistration lets its connections finish (deregister.go).
	deregistering atomic.Bool
}

// handoff is the listener a generation serves: the server's one accept loop hands it the
// connections it accepts, so that one generation can stop while the next takes over.
type handoff struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (h *handoff) Addr() net.Addr { return h.addr }

// events is the state of a server with Config.Events.
type events struct {
	mu      sync.Mutex
	cur     *generation  // nil while a restart's gap lasts or after a drain
	ln      net.Listener // the listener accepting; nil while a restart's gap lasts or after a drain
	closed  bool         // closeEvents ran: nothing listens again
	gens    []*generation
	timers  []*time.Timer
	cancels []context.CancelFunc // each retired generation's Shutdown
	stopped sync.WaitGroup       // every Shutdown goroutine
	serving sync.WaitGroup       // the accept loop and every generation's Serve
	err     error                // the first serving error; guarded by mu
	byCount map[int64][]Event
}

// serveWithEvents starts the first generation and the accept loop, and arms the events.
func (s *Server) serveWithEvents() {
	ev := &events{byCount: make(map[int64][]Event), ln: s.ln}
	s.ev = ev
	// One count for the server itself, given back by closeEvents: a drain or a restart's
	// gap ends every accept loop and generation, and the server is not done then.
	ev.serving.Add(2)
	ev.mu.Lock()
	s.startGeneration(s.srv)
	ev.mu.Unlock()
	for _, e := range s.cfg.Events {
		if e.AfterRequests > 0 {
			ev.byCount[e.AfterRequests] = append(ev.byCount[e.AfterRequests], e)
		}
	}
	go s.acceptLoop(s.ln)
	go func() {
		ev.serving.Wait()
		ev.mu.Lock()
		s.serveErr = ev.err
		ev.mu.Unlock()
		close(s.serveDone)
	}()
}

// startGeneration serves srv on a new handoff listener; ev.mu is held.
func (s *Server) startGeneration(srv *http.Server) {
	g := &generation{srv: srv, ln: &handoff{addr: s.ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}}
	srv.ConnState = func(c net.Conn, st http.ConnState) { s.connStateIn(c, st, g) }
	s.ev.cur = g
	s.ev.gens = append(s.ev.gens, g)
	s.ev.serving.Add(1)
	go func() {
		defer s.ev.serving.Done()
		var err error
		if s.cfg.TLS {
			err = srv.ServeTLS(g.ln, "", "")
		} else {
			err = srv.Serve(g.ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.ev.setErr(err)
		}
	}()
}

func (ev *events) setErr(err error) {
	ev.mu.Lock()
	if ev.err == nil {
		ev.err = err
	}
	ev.mu.Unlock()
}

// acceptLoop hands every connection ln accepts to the generation serving, or closes it at
// once when none does; it ends when ln closes (a drain, a restart, Close).
func (s *Server) acceptLoop(ln net.Listener) {
	defer s.ev.serving.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !s.closing.Load() && !errors.Is(err, net.ErrClosed) {
				s.ev.setErr(err)
			}
			return
		}
		s.handOff(c)
	}
}

// closeListener stops accepting: a connect from now on is refused, as when a process
// that stopped or died holds no listening socket. ev.mu is held.
func (s *Server) closeListener() {
	if s.ev.ln == nil {
		return
	}
	_ = s.ev.ln.Close()
	s.ev.ln = nil
}

// relisten ends a restart's gap: the server listens on its address again and a new
// generation serves. ev.mu is held.
func (s *Server) relisten() {
	ev := s.ev
	if ev.closed || s.closing.Load() || ev.cur != nil {
		return
	}
	listen := s.cfg.Relisten
	if listen == nil {
		listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	ln, err := listen(s.ln.Addr().String())
	if err != nil {
		if ev.err == nil {
			ev.err = fmt.Errorf("listening again after a restart: %w", err)
		}
		return
	}
	ev.ln = ln
	ev.serving.Add(1)
	go s.acceptLoop(ln)
	s.startGeneration(s.newHTTPServer())
}

func (s *Server) handOff(c net.Conn) {
	for {
		s.ev.mu.Lock()
		g := s.ev.cur
		s.ev.mu.Unlock()
		if g == nil || s.closing.Load() {
			_ = c.Close() // nothing serves: the client sees the close on its first request
			return
		}
		select {
		case g.ln.conns <- c:
			return
		case <-g.ln.done:
		}
	}
}

// ArmEvents starts the timers of the events given a time (Event.At), from t0: the instant the
// run's load starts. Without it no timed event happens; events after a number of requests
// need none.
func (s *Server) ArmEvents(t0 time.Time) {
	if s.ev == nil {
		return
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	if s.closing.Load() {
		return
	}
	for _, e := range s.cfg.Events {
		if e.AfterRequests > 0 {
			continue
		}
		due := t0.Add(e.At)
		s.ev.timers = append(s.ev.timers, time.AfterFunc(time.Until(due), func() {
			// On the real clock a late event moves which requests race it: its lateness is
			// the server's timers', for the timing judge.
			s.cfg.Lag.Since(due)
			s.fire(e)
		}))
	}
}

// afterRequest fires the events due after the n-th request.
func (s *Server) afterRequest(n int64) {
	if s.ev == nil {
		return
	}
	for _, e := range s.ev.byCount[n] {
		s.fire(e)
	}
}

// fire carries out e. The old generation stops taking keep-alive requests before fire
// returns (its idle connections close, a response not yet written carries "Connection:
// close"), so the instant of the event decides which requests race it, not the scheduler.
func (s *Server) fire(e Event) {
	ev := s.ev
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if s.closing.Load() {
		return
	}
	old := ev.cur
	if old == nil {
		// A restart's gap or a drain already retired every generation and closed the
		// listener: nothing listens to reload, drain or restart.
		return
	}
	ev.cur = nil
	if e.Kind == EventDeregister {
		s.deregister(old, e.Grace)
		return
	}
	if e.Kind == EventGoAway {
		s.startGeneration(s.newHTTPServer())
	}
	old.reason.Store(e.Kind)
	if e.Kind == EventRestart {
		s.closeListener()
		_ = old.srv.Close() // every connection at once
		ev.timers = append(ev.timers, time.AfterFunc(e.Gap, func() {
			ev.mu.Lock()
			defer ev.mu.Unlock()
			s.relisten()
		}))
		return
	}
	if e.Kind == EventDrain && !fault.On(fault.DrainAccepts) {
		s.closeListener()
	}
	if e.Kind == EventGoAway && fault.On(fault.ReloadKeepsIdle) {
		_ = old.ln.Close() // new connections go to the new generation; the old ones stay
		return
	}
	old.srv.SetKeepAlivesEnabled(false) // closes idle HTTP/1.1 connections now
	var ctx context.Context
	var cancel context.CancelFunc
	if e.Kind == EventDrain && e.Grace > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), e.Grace)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	ev.cancels = append(ev.cancels, cancel)
	ev.stopped.Add(1)
	go func() {
		defer ev.stopped.Done()
		defer cancel()
		// Shutdown sends each HTTP/2 connection its GOAWAY and waits for the connections to
		// end; past a drain's grace, Close ends the rest.
		if err := old.srv.Shutdown(ctx); err != nil {
			_ = old.srv.Close()
		}
	}()
}

// closeEvents stops the events' timers and every generation; Close calls it.
func (s *Server) closeEvents() error {
	ev := s.ev
	defer ev.stopped.Wait()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, t := range ev.timers {
		t.Stop()
	}
	for _, cancel := range ev.cancels {
		cancel()
	}
	var err error
	if ev.ln != nil {
		if err = ev.ln.Close(); errors.Is(err, net.ErrClosed) {
			err = nil
		}
		ev.ln = nil
	}
	if !ev.closed {
		ev.closed = true
		ev.serving.Done() // the server's own count (serveWithEvents)
	}
	for _, g := range ev.gens {
		_ = g.ln.Close()
		if cerr := g.srv.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) && err == nil {
			err = cerr
		}
	}
	return err
}
