package topology

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/h3"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/judge"
	"github.com/kalab-dev/kalab/engine/netsim/clock"
	"github.com/kalab-dev/kalab/engine/quicnet"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/server"
	"github.com/kalab-dev/kalab/engine/shape"
)

// buildH3 is an HTTP/3 run's chain: client -> [middlebox] -> [link] -> server, each a hop
// over datagrams (engine/quicnet): loopback UDP on the real clock, the in-memory packet
// network on the virtual one.
func (t *topology) buildH3(st scenario.Settings, scale shape.Scale, opt Options, tm *judge.Timers) {
	pn := quicnet.Net(quicnet.Real())
	if t.net != nil {
		mem := quicnet.NewMemory()
		mem.SetOnEvent(t.net.Event) // the virtual clock's watchdog sees datagrams as progress
		pn = mem
	}
	t.pnet = pn
	srv := &h3Server{cfg: configure.H3Server(st, scale), pn: pn, version: opt.KalabVersion}
	t.server = srv
	// The precise clock on the real clock, a waiter per wait: every lane of every flow waits
	// at once. On the virtual one the network's order: datagrams due at one instant leave in
	// the order they were queued, not in the order Go's scheduler wakes the lanes.
	// The box keeps its Go timers on the real clock (a nil Sleep).
	sleep, boxSleep := clock.Sleep, (func(time.Time, <-chan struct{}) bool)(nil)
	if t.net != nil {
		sleep, boxSleep = t.net.Sleep, t.net.Sleep
	}
	if st.Middlebox != nil {
		box := &datagramHop{role: "middlebox", cfg: configure.NAT(st.Middlebox, scale, ""), pn: pn,
			version: opt.KalabVersion, preset: st.Middlebox.Preset}
		box.cfg.Sleep = boxSleep
		t.path = append(t.path, box)
	}
	if !shape.DatagramDirect(st) {
		link := &datagramHop{role: roleLink, cfg: configure.DatagramLink(st, scale, ""), pn: pn, version: opt.KalabVersion}
		link.cfg.Lag, link.cfg.Sleep = &tm.Link, sleep
		t.path = append(t.path, link)
	}
	t.path = append(t.path, srv)
}

// h3Build is the client builder of an HTTP/3 run: the TCP client's request and retry rules
// over kalab's HTTP/3 client, each connection on its own socket.
func (t *topology) h3Build(st scenario.Settings, scale shape.Scale) func(client.Config) (client.Client, error) {
	return func(base client.Config) (client.Client, error) {
		listen := func() (net.PacketConn, error) { return t.pnet.ListenPacket("127.0.0.1:0") }
		return h3.NewClient(configure.H3Client(st, scale, base, listen))
	}
}

// datagramHop is a link or a middlebox on an HTTP/3 run's path: a relay of datagrams.
type datagramHop struct {
	role    string
	cfg     quicnet.Config
	pn      quicnet.Net
	version string
	preset  string
	relay   *quicnet.Relay
}

func (d *datagramHop) Role() string { return d.role }

func (d *datagramHop) Start(ctx context.Context, next string) (string, error) {
	cfg := d.cfg
	cfg.Upstream = next
	r, err := quicnet.Start(ctx, d.pn, cfg)
	if err != nil {
		return "", err
	}
	d.relay = r
	return r.Addr().String(), nil
}

func (d *datagramHop) Identity() Identity {
	name := "kalab"
	if d.preset != "" {
		name = d.preset
	}
	return Identity{Kind: "quicnet", Name: name, Version: d.version, Verified: true}
}

func (d *datagramHop) Timing() map[string]*lag.Recorder {
	if d.cfg.Lag == nil {
		return nil
	}
	return map[string]*lag.Recorder{judge.SrcLink: d.cfg.Lag}
}

func (d *datagramHop) Stats() Stats {
	if d.relay == nil {
		return datagramStats{role: d.role}
	}
	return datagramStats{role: d.role, s: d.relay.Stats()}
}

func (d *datagramHop) Close() error {
	if d.relay == nil {
		return nil
	}
	return d.relay.Close()
}

// datagramStats are a datagram hop's counters under the metric vocabulary's names.
type datagramStats struct {
	role string
	s    quicnet.Stats
}

func (s datagramStats) Flatten(into map[string]float64) {
	if s.role == "middlebox" {
		into["middlebox_flows"] = float64(s.s.Flows)
		into["middlebox_expired"] = float64(s.s.Expired)
		into["middlebox_rebinds"] = float64(s.s.Rebinds)
		into["middlebox_dropped_datagrams"] = float64(s.s.DroppedExpired)
		into["middlebox_replays"] = float64(s.s.Replays)
		return
	}
	into["bytes_up"] = float64(s.s.BytesUp)
	into["bytes_down"] = float64(s.s.BytesDown)
	into["datagrams_lost"] = float64(s.s.LostUp + s.s.LostDown)
}

// h3Server is kalab's embedded HTTP/3 server.
type h3Server struct {
	cfg     h3.ServerConfig
	pn      quicnet.Net
	version string
	roots   *x509.CertPool
	cert    tls.Certificate
	srv     *h3.Server
}

func (e *h3Server) Role() string { return "server" }

func (e *h3Server) Start(context.Context, string) (string, error) {
	newCert := server.NewCertificate
	if _, mem := e.pn.(*quicnet.Memory); mem {
		newCert = server.NewEd25519Certificate // handshakes of one size, as over TCP: no signature's length in the byte counts
	}
	cert, roots, err := newCert()
	if err != nil {
		return "", err
	}
	pc, err := e.pn.ListenPacket("127.0.0.1:0")
	if err != nil {
		return "", err
	}
	cfg := e.cfg
	cfg.Cert = cert
	srv, err := h3.StartServer(pc, cfg)
	if err != nil {
		_ = pc.Close() // the error returned says what failed
		return "", err
	}
	e.srv, e.roots, e.cert = srv, roots, cert
	return srv.Addr().String(), nil
}

func (e *h3Server) Identity() Identity {
	return Identity{Kind: "embedded", Name: "kalab", Program: "quic-go", Version: e.version, Verified: true}
}

// Timing is none of kalab's: the server's idle closes are quic-go's own timers.
func (e *h3Server) Timing() map[string]*lag.Recorder { return nil }

func (e *h3Server) Stats() Stats { return h3ServerStats(e.srv.Stats()) }

func (e *h3Server) Close() error {
	if e.srv == nil {
		return nil
	}
	return e.srv.Close()
}

func (e *h3Server) accepted() int64 { return e.srv.Stats().Connections }
func (e *h3Server) record() *report.Server {
	id := e.Identity()
	return &report.Server{Kind: id.Kind, Name: id.Name, Version: id.Version}
}
func (e *h3Server) closedAt(uint64) (server.ConnRecord, bool) { return server.ConnRecord{}, false }
func (e *h3Server) endpoint() endpoint {
	return endpoint{roots: e.roots, serverName: "localhost"}
}

func (e *h3Server) conns(rc *recorder, loadEnd time.Time) []report.Conn {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return serverConns(h3.ServerConnRecords(e.srv.Stats().Conns), rc.serverOf, rc.clientWhy, rc.start, loadEnd, float64(rc.scale))
}

// h3ServerStats flattens the HTTP/3 server's counters.
type h3ServerStats h3.ServerStats

func (s h3ServerStats) Flatten(into map[string]float64) {
	into["server_connections"] = float64(s.Connections)
	into["server_idle_closes"] = float64(s.IdleTimeouts)
	into["server_requests"] = float64(s.Requests)
	into["zero_rtt_accepted"] = float64(s.ZeroRTTAccepted)
	into["zero_rtt_requests"] = float64(s.ZeroRTTRequests)
	into["path_migrations"] = float64(s.PathMigrations)
	// The server's count of handshakes and resumptions; kalab's own HTTP/3 client, later in
	// flatten, writes its own over them, and Chromium, which cannot say, leaves them.
	into["tls_handshakes"] = float64(s.TLSHandshakes)
	into["tls_resumed"] = float64(s.TLSResumed)
}
