package configure

import (
	"net/url"
	"strconv"
	"time"

	"github.com/kalab-dev/kalab/engine/realserver"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// RealKind says which real server a run's settings ask for; "" is the embedded server.
func RealKind(s scenario.Server) realserver.Kind {
	switch {
	case s.Exec != "":
		return realserver.Kind(s.Exec)
	case s.Command != "":
		return realserver.Command
	case s.URL != "":
		return realserver.URL
	}
	return ""
}

// RealServer translates a run's server settings for a real server; ok is false when
// the run uses the embedded server.
func RealServer(st scenario.Settings, sc shape.Scale, allowRemote bool) (realserver.Config, bool) {
	s := st.Server
	kind := RealKind(s)
	if kind == "" {
		return realserver.Config{}, false
	}
	cfg := realserver.Config{
		Kind:                 kind,
		Command:              s.Command,
		URL:                  s.URL,
		AllowRemote:          allowRemote,
		Env:                  st.Env,
		TLS:                  s.TLS,
		TLSVersion:           TLSVersion(s.TLSVersion),
		SessionTickets:       s.SessionTickets,
		HTTP2:                s.HTTP == "2",
		IdleTimeout:          sc.D(s.IdleTimeout),
		Hint:                 HintHeader(s),
		HintOnlyIfAsked:      s.HintOnlyIfAsked,
		MaxRequests:          s.MaxRequests,
		CloseEvery:           s.CloseEvery,
		MaxConcurrentStreams: s.HTTP2MaxStreams,
		Status:               s.Response.Status,
		BodyBytes:            s.Response.BodyBytes,
		Delay:                sc.D(s.Response.Delay),
		Events:               Server(st, sc).Events,
	}
	if kind == realserver.URL {
		if u, err := url.Parse(s.URL); err == nil {
			cfg.TLS = u.Scheme == "https" // the scheme decides; Check reports a contradiction
		}
	}
	return cfg, true
}

// HintHeader is the Keep-Alive value a scenario asks for, in scenario seconds like the
// embedded server's (so a client reads the same hint at every time scale), without the
// max= part a server adds by itself.
func HintHeader(s scenario.Server) string {
	switch s.KeepaliveHint.Mode {
	case scenario.HintOn:
		if s.IdleTimeout > 0 {
			return "timeout=" + strconv.FormatInt(int64(s.IdleTimeout.D()/time.Second), 10)
		}
	case scenario.HintDuration:
		return "timeout=" + strconv.FormatInt(int64(s.KeepaliveHint.Duration.D()/time.Second), 10)
	case scenario.HintRaw:
		return s.KeepaliveHint.Raw
	}
	return ""
}

// RealBalancer translates balancer b, a real program (b.Exec), into the configuration kalab
// writes for it: its client-facing idle timeout and its pool to what it dials (filled in
// when the hop starts). A pool the model leaves unbounded (max_idle 0) keeps at most
// realPoolMax idle connections: nginx's keepalive takes a number.
func RealBalancer(b *scenario.Balancer, sc shape.Scale, env []string) realserver.Config {
	cfg := realserver.Config{Kind: realserver.Kind(b.Exec), Env: env, IdleTimeout: sc.D(b.IdleTimeout)}
	if b.Backend.KeepAlive {
		cfg.UpstreamKeepalive = b.Backend.MaxIdle
		if cfg.UpstreamKeepalive <= 0 {
			cfg.UpstreamKeepalive = realPoolMax
		}
		cfg.UpstreamIdle = sc.D(b.Backend.IdleTimeout)
	}
	return cfg
}

// realPoolMax is the idle pool of a real balancer whose model pool is unbounded.
const realPoolMax = 1024
