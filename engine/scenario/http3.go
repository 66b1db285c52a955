package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// udpPresets are the middlebox presets that model a box's UDP flows: the only ones an
// HTTP/3 run may name, and the only ones a TCP run may not.
var udpPresets = map[string]bool{"gcp-cloud-nat-udp": true, "linux-conntrack-udp": true}

// Chromium is the one real client program that speaks HTTP/3 here.
const chromiumAdapter = "chromium"

// checkHTTP3 refuses what an HTTP/3 run cannot carry and what only an HTTP/3 run can: a
// field that would be silently ignored measures something else than the file says.
func (l *loader) checkHTTP3(r *Run, at func(string) *yaml.Node, where string) {
	st := r.Settings
	refuse := func(path, why string) { l.add(at(path), path, "%s%s", why, where) }
	l.checkMiddleboxExpiry(st, r.node, refuse)
	if !st.Server.HTTP3() {
		l.checkTCPOnly(st, r.node, refuse)
		return
	}
	s := st.Server
	if written(r.node, "server.tls_version") && s.TLSVersion != "1.3" {
		// RFC 9001 section 4.2: "Clients MUST NOT offer TLS versions older than 1.3."
		refuse("server.tls_version", "QUIC carries TLS 1.3 only (RFC 9001 section 4.2), so an HTTP/3 run would ignore "+string(s.TLSVersion)+"; remove it or set server.http: \"1.1\" or \"2\" to test TLS "+string(s.TLSVersion))
	}
	switch {
	case s.Real():
		refuse("server", "over HTTP/3 the server is kalab's embedded one (quic-go); a real HTTP/3 server is not supported yet")
	case st.Balancer != nil:
		refuse("balancer", "the balancer speaks HTTP/1.1; remove it or set server.http: \"1.1\"")
	}
	for path, set := range map[string]bool{
		"server.max_requests": s.MaxRequests > 0, "server.close_every": s.CloseEvery > 0,
		"server.backlog": s.Backlog > 0, "server.accept_delay": s.AcceptDelay > 0,
		"server.keepalive_hint": s.KeepaliveHint.Mode != "" && s.KeepaliveHint.Mode != HintOff,
		"client.honor_hint":     st.Client.HonorHint,
	} {
		if set {
			refuse(path, "has no HTTP/3 meaning here (QUIC has no Keep-Alive header, and the embedded HTTP/3 server has no listen queue or per-connection cap); set server.http: \"1.1\" to test it")
		}
	}
	if !st.Client.KeepAlive {
		refuse("client.keepalive", "an HTTP/3 client that closes its connection after each response is not modelled; set keepalive: true")
	}
	if st.Client.QUIC.ZeroRTT != "" && st.Client.QUIC.ZeroRTT != "off" && !st.Client.SessionResumption {
		refuse("client.quic.zero_rtt", "0-RTT resumes a TLS session: set client.session_resumption: true")
	}
	l.checkQUICIdle(st, refuse)
	l.checkHTTP3Middlebox(st, refuse)
	if e := st.Client.Exec; e != nil && e.Adapter != chromiumAdapter {
		refuse("client.exec", "the real HTTP/3 client kalab drives is Chromium ({adapter: chromium}); "+execName(e)+" speaks HTTP/1.1 and HTTP/2")
	}
}

// quicIdleFloor is the least max_idle_timeout quic-go takes from its peer: a smaller one is
// read as this (internal/protocol/params.go MinRemoteIdleTimeout, applied by
// internal/wire/transport_parameters.go), so below it the two ends would not agree on when
// the connection ends.
const quicIdleFloor = Duration(5 * time.Second)

// QUICIdleShort is an HTTP/3 idle timeout under quic-go's floor: as written (D), or once a
// time scale under 1 shrinks it on the real clock (Scaled).
type QUICIdleShort struct {
	Path      string // server.idle_timeout or client.idle_timeout
	D, Scaled Duration
}

// QUICIdleUnderFloor lists the HTTP/3 run's idle timeouts that the two ends of kalab's
// HTTP/3 would read apart at time scale scale (1 when not in (0, 1)), server first.
func QUICIdleUnderFloor(st Settings, scale float64) []QUICIdleShort {
	if scale <= 0 || scale > 1 {
		scale = 1
	}
	var out []QUICIdleShort
	for _, f := range []QUICIdleShort{{Path: "server.idle_timeout", D: st.Server.IdleTimeout}, {Path: "client.idle_timeout", D: st.Client.IdleTimeout}} {
		f.Scaled = Duration(float64(f.D) * scale)
		if f.D > 0 && f.Scaled < quicIdleFloor {
			out = append(out, f)
		}
	}
	return out
}

// checkQUICIdle refuses an idle timeout the two ends of kalab's HTTP/3 would read apart,
// written or once the file's time scale shrinks it on the real clock.
func (l *loader) checkQUICIdle(st Settings, refuse func(path, why string)) {
	why := "quic-go, which both ends of kalab's HTTP/3 run, reads a peer's max_idle_timeout under 5 s as 5 s (MinRemoteIdleTimeout), so client and server would not agree when the connection ends"
	for _, f := range QUICIdleUnderFloor(st, st.TimeScale) {
		if f.D < quicIdleFloor {
			refuse(f.Path, fmt.Sprintf("%s is under 5 s: %s; use 5 s or more", f.D, why))
		} else {
			refuse(f.Path, fmt.Sprintf("%s is %s at time_scale %g on the real clock, under 5 s: %s; use a time_scale that keeps it at 5 s or more", f.D, f.Scaled, st.TimeScale, why))
		}
	}
}

// checkHTTP3Middlebox refuses a TCP box on a QUIC path: its timeout is a TCP flow's.
func (l *loader) checkHTTP3Middlebox(st Settings, refuse func(path, why string)) {
	mb := st.Middlebox
	if mb == nil {
		return
	}
	if mb.Preset != "" && !udpPresets[mb.Preset] {
		refuse("middlebox.preset", "models a box's TCP flows; over HTTP/3 name a UDP preset ("+strings.Join(slices.Sorted(maps.Keys(udpPresets)), ", ")+") or set idle_timeout")
	}
	if mb.OnExpiry == "reset" && (mb.Preset == "" || udpPresets[mb.Preset]) {
		refuse("middlebox.on_expiry", "a UDP flow has no reset to send; use rebind (a NAT) or drop (a firewall)")
	}
}

// written reports whether the run's own document (file, variant and matrix, before
// presets and defaults) sets the dotted path.
func written(node *yaml.Node, path string) bool {
	for _, part := range strings.Split(path, ".") {
		if node = child(node, part); node == nil {
			return false
		}
	}
	return true
}

// checkMiddleboxExpiry refuses what the box does at expiry on a box that never forgets a
// flow (idle_timeout 0 or none): the run would ignore it.
func (l *loader) checkMiddleboxExpiry(st Settings, node *yaml.Node, refuse func(path, why string)) {
	boxes := st.Middleboxes()
	for i, mb := range boxes {
		if mb.IdleTimeout != 0 {
			continue
		}
		at := MiddleboxPath(i, len(boxes))
		for _, field := range []string{"on_expiry", "reset_at", "reset_to"} {
			if path := at + "." + field; written(node, path) {
				refuse(path, "never applies: "+at+".idle_timeout is 0 (none), so the box never forgets a flow; give idle_timeout a duration, or remove "+path)
			}
		}
	}
}

// checkTCPOnly refuses the HTTP/3-only fields on a TCP run.
func (l *loader) checkTCPOnly(st Settings, node *yaml.Node, refuse func(path, why string)) {
	if written(node, "client.quic") {
		refuse("client.quic", "is what the client does over QUIC (keep-alive PINGs, 0-RTT), and this run speaks HTTP/"+string(st.Server.HTTP)+" over TCP, where it would be ignored; remove it or set server.http: \"3\"")
	}
	if st.Network.Loss > 0 {
		refuse("network.loss", "only HTTP/3's datagrams are lost on kalab's link (TCP would retransmit what a lossy link drops, which the TCP link does not model); set server.http: \"3\"")
	}
	if st.Server.ZeroRTT {
		refuse("server.zero_rtt", "0-RTT is modelled over HTTP/3 only; set server.http: \"3\"")
	}
	boxes := st.Middleboxes()
	for i, mb := range boxes {
		at := MiddleboxPath(i, len(boxes))
		switch {
		case udpPresets[mb.Preset]:
			refuse(at+".preset", "models a box's UDP flows, which only HTTP/3 uses; name a TCP preset or set server.http: \"3\"")
		case mb.OnExpiry == "rebind":
			refuse(at+".on_expiry", "a NAT rebinding is modelled for UDP flows (HTTP/3); a TCP connection cannot move to a new port")
		case mb.ReplayFirstFlight > 0:
			refuse(at+".replay_first_flight", "replays QUIC's 0-RTT first flight; set server.http: \"3\"")
		}
	}
	if e := st.Client.Exec; e != nil && e.Adapter == chromiumAdapter {
		refuse("client.exec", "kalab drives Chromium as an HTTP/3 client only; set server.http: \"3\"")
	}
}

// execName names a client.exec for a message.
func execName(e *Exec) string {
	if e.Adapter != "" {
		return e.Adapter
	}
	return "a command"
}
