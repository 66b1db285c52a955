package probe

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/kalab-dev/kalab/engine/loopback"
)

// H3 is what the probe found of HTTP/3: whether the server advertises it (Alt-Svc, RFC
// 7838) and, when its QUIC endpoint answers, the max_idle_timeout of its transport
// parameters (RFC 9000 18.2) and whether a resumed connection's 0-RTT is accepted.
type H3 struct {
	AltSvc  string // the first response's Alt-Svc header as sent, "" when none
	Addr    string // the h3 alternative tried, host:port; "" when none is advertised
	Reached bool   // a QUIC handshake with it completed
	// MaxIdle is the server's max_idle_timeout as it sent it (a parameter, not a
	// measurement); MaxIdleSent is false when it sent none (no idle timeout of its own).
	MaxIdle     time.Duration
	MaxIdleSent bool
	// ZeroRTT says whether a second connection, resuming the first's session, had its
	// 0-RTT accepted; ZeroRTTTried is false when the first connection got no ticket.
	ZeroRTT, ZeroRTTTried bool
	Err                   string
}

// altSvcH3 finds the h3 alternative in an Alt-Svc value (`h3=":443"; ma=86400, h3-29=...`):
// its authority, with the origin's host when it names none.
func altSvcH3(v, originHost string) string {
	for alt := range strings.SplitSeq(v, ",") {
		first, _, _ := strings.Cut(strings.TrimSpace(alt), ";")
		proto, auth, ok := strings.Cut(first, "=")
		if !ok || strings.TrimSpace(proto) != "h3" {
			continue
		}
		auth = strings.Trim(strings.TrimSpace(auth), `"`)
		host, port, err := net.SplitHostPort(auth)
		if err != nil {
			continue
		}
		if host == "" {
			host = originHost
		}
		return net.JoinHostPort(host, port)
	}
	return ""
}

// paramTrace keeps the peer's transport parameters from quic-go's qlog events.
type paramTrace struct {
	mu      sync.Mutex
	maxIdle time.Duration
	seen    bool
}

func (t *paramTrace) AddProducer() qlogwriter.Recorder { return t }
func (t *paramTrace) Close() error                     { return nil }
func (t *paramTrace) RecordEvent(ev qlogwriter.Event) {
	if e, ok := ev.(qlog.ParametersSet); ok && e.Initiator == qlog.InitiatorRemote {
		t.mu.Lock()
		t.maxIdle, t.seen = e.MaxIdleTimeout, true
		t.mu.Unlock()
	}
}

// h3Probe dials the advertised HTTP/3 alternative twice: the first handshake reads the
// server's transport parameters and keeps its session ticket; the second resumes it and
// says whether 0-RTT was accepted. Nothing is requested over HTTP/3.
func (p *prober) h3Probe(ctx context.Context, altSvc string) H3 {
	h := H3{AltSvc: altSvc}
	alt := altSvcH3(altSvc, p.t.serverName)
	if alt == "" {
		return h
	}
	addr, err := loopback.Check(alt, p.opt.AllowRemote)
	if err != nil {
		h.Err = "the h3 alternative " + alt + " is not on loopback (--allow-remote)"
		return h
	}
	h.Addr = alt
	name := p.opt.ServerName
	if name == "" {
		name = p.t.serverName
	}
	conf := &tls.Config{ServerName: name, RootCAs: p.opt.RootCAs, NextProtos: []string{"h3"},
		ClientSessionCache: tls.NewLRUClientSessionCache(2)}
	tr := &paramTrace{}
	_, closeFirst, err := p.quicDial(ctx, addr, conf, tr)
	if err != nil {
		h.Err = err.Error()
		return h
	}
	h.Reached = true
	tr.mu.Lock()
	h.MaxIdle, h.MaxIdleSent = tr.maxIdle, tr.seen && tr.maxIdle > 0
	tr.mu.Unlock()
	// The session ticket comes after the handshake: give it a round trip to arrive.
	time.Sleep(min(p.opt.RequestTimeout, 100*time.Millisecond))
	closeFirst()
	second, closeSecond, err := p.quicDial(ctx, addr, conf, &paramTrace{})
	if err != nil {
		return h
	}
	defer closeSecond()
	st := second.ConnectionState()
	h.ZeroRTTTried, h.ZeroRTT = st.TLS.DidResume, st.Used0RTT
	return h
}

// quicDial opens one QUIC connection within the connection budget, from a socket bound to
// loopback when the server is there, with 0-RTT when the session cache holds a ticket that
// allows it. The returned func closes the connection and its socket.
func (p *prober) quicDial(ctx context.Context, addr string, conf *tls.Config, tr *paramTrace) (*quic.Conn, func(), error) {
	p.mu.Lock()
	if p.conns >= p.opt.MaxConns {
		p.mu.Unlock()
		return nil, nil, errConnBudget
	}
	p.conns++
	p.mu.Unlock()
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, nil, err
	}
	local := &net.UDPAddr{}
	if raddr.IP.IsLoopback() {
		local.IP = raddr.IP
	}
	pc, err := net.ListenUDP("udp", local)
	if err != nil {
		return nil, nil, err
	}
	qt := &quic.Transport{Conn: pc}
	dctx, cancel := context.WithTimeout(ctx, p.opt.RequestTimeout)
	defer cancel()
	qc := &quic.Config{Tracer: func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return tr }}
	c, err := qt.DialEarly(dctx, raddr, conf, qc)
	if err != nil {
		_ = qt.Close()
		return nil, nil, err
	}
	done := func() {
		_ = c.CloseWithError(0, "")
		_ = qt.Close()
	}
	select {
	case <-c.HandshakeComplete():
		return c, done, nil
	case <-dctx.Done():
		done()
		return nil, nil, dctx.Err()
	}
}
