package configure

import (
	"net"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/h3"
	"github.com/kalab-dev/kalab/engine/quicnet"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// noIdleTimeout stands for "none" over QUIC, where a max_idle_timeout of 0 means quic-go's
// default of 30 s rather than no limit: a day outlasts every run's deadline.
const noIdleTimeout = 24 * time.Hour

// quicIdle is a max_idle_timeout from a scenario's idle timeout.
func quicIdle(d scenario.Duration, sc shape.Scale) time.Duration {
	if d == 0 {
		return noIdleTimeout
	}
	return sc.D(d)
}

// H3Server is the embedded HTTP/3 server's config: the server section over QUIC.
func H3Server(st scenario.Settings, sc shape.Scale) h3.ServerConfig {
	s := st.Server
	return h3.ServerConfig{
		IdleTimeout: quicIdle(s.IdleTimeout, sc),
		ZeroRTT:     s.ZeroRTT,
		Status:      s.Response.Status,
		BodyBytes:   s.Response.BodyBytes,
		Delay:       sc.D(s.Response.Delay),
		Stamp:       true,
	}
}

// H3Client is the HTTP/3 client's config: the request and retry rules the TCP clients
// take (base, from Client), over QUIC with the client's own idle timeout, PINGs and 0-RTT.
// listen opens the socket of each new connection.
func H3Client(st scenario.Settings, sc shape.Scale, base client.Config, listen func() (net.PacketConn, error)) h3.ClientConfig {
	q := st.Client.QUIC
	idle := quicIdle(st.Client.IdleTimeout, sc)
	if fault.On(fault.QUICClientIdleDropped) {
		idle = 0
	}
	if server := quicIdle(st.Server.IdleTimeout, sc); fault.On(fault.QUICIdleMax) && idle != noIdleTimeout && server != noIdleTimeout {
		idle = max(idle, server)
	}
	keepAlive := sc.D(q.KeepAlivePeriod)
	if keepAlive == 0 && fault.On(fault.QUICIdlePings) {
		keepAlive = 10 * time.Second // quic-go http3's default, PINGs while the connection idles
	}
	return h3.ClientConfig{
		Addr:              base.Addr,
		ListenPacket:      listen,
		ServerName:        base.ServerName,
		RootCAs:           base.RootCAs,
		IdleTimeout:       idle,
		KeepAlivePeriod:   keepAlive,
		ZeroRTT:           q.ZeroRTT, // "" is h3's off
		SessionResumption: base.SessionResumption,
		KeyShares:         base.KeyShares,
		Method:            base.Method,
		Path:              base.Path,
		BodyBytes:         base.BodyBytes,
		Headers:           base.Headers,
		Timeout:           base.Timeout,
		Retry:             base.Retry,
		ConnIDs:           base.ConnIDs,
	}
}

// DatagramLink is the HTTP/3 run's link: the network section per datagram.
func DatagramLink(st scenario.Settings, sc shape.Scale, upstream string) quicnet.Config {
	n := st.Network
	return quicnet.Config{Upstream: upstream, RTT: sc.D(n.RTT), Jitter: sc.D(n.Jitter), Seed: st.Load.Seed, Loss: n.Loss,
		Bandwidth: scaledBandwidth(n.Bandwidth, sc)}
}

// NAT is the HTTP/3 run's middlebox: a box that forgets a UDP flow idle for its timeout,
// and with replay_first_flight an attacker that replays 0-RTT.
func NAT(m *scenario.Middlebox, sc shape.Scale, upstream string) quicnet.Config {
	// on_expiry is drop or rebind here: the load refuses reset on a QUIC path.
	return quicnet.Config{Upstream: upstream, FlowTimeout: sc.D(m.IdleTimeout), OnExpiry: m.OnExpiry,
		ReplayFirstFlight: sc.D(m.ReplayFirstFlight)}
}
