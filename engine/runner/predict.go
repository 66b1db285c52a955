package runner

import (
	"time"

	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// oraclePlan is the oracle's view of a run: its settings in scenario time, with the seeded
// pauses the load package draws for it (drawn at the run's scale, read back in scenario
// time: the draws scale with the range).
func oraclePlan(st scenario.Settings) oracle.Plan {
	scale := st.TimeScale
	if scale <= 0 {
		scale = 1
	}
	l := st.Load
	p := oracle.Plan{
		Requests: l.Requests, Concurrency: l.Concurrency, Burst: l.Burst,
		OpenModel: l.Rate > 0,
		RTT:       st.Network.RTT.D(), Jitter: st.Network.Jitter.D(),
		Backlog:  st.Server.Backlog > 0 || st.Server.AcceptDelay > 0,
		Server:   oracleServer(st),
		Client:   oracleClient(st),
		Balancer: oracleBalancer(st.Balancer),
	}
	for _, real := range load.Pauses(loadSpec(st, scaler(scale))) {
		p.Pauses = append(p.Pauses, time.Duration(float64(real)/scale))
	}
	return p
}

func oracleServer(st scenario.Settings) oracle.Server {
	s := st.Server
	out := oracle.Server{
		HTTP2: speaksHTTP2(st), IdleTimeout: s.IdleTimeout.D(),
		MaxRequests: s.MaxRequests, CloseEvery: s.CloseEvery,
	}
	switch {
	case s.Exec != "":
		out.Real = s.Exec
	case s.Command != "":
		out.Real = "server.command"
	case s.URL != "":
		out.Real = "server.url"
	}
	asked := !s.HintOnlyIfAsked || st.Client.KeepAliveHeader
	switch s.KeepaliveHint.Mode {
	case scenario.HintOn:
		out.Hint, out.HasHint = s.IdleTimeout.D().Truncate(time.Second), s.IdleTimeout > 0 && asked
	case scenario.HintDuration:
		out.Hint, out.HasHint = s.KeepaliveHint.Duration.D().Truncate(time.Second), asked
	case scenario.HintRaw:
		if st.Client.HonorHint {
			out.Real = "a raw Keep-Alive header value (" + s.KeepaliveHint.Raw + ")" // parsed by the client's own rule, not modelled here
		}
	}
	return out
}

func oracleClient(st scenario.Settings) oracle.Client {
	c := st.Client
	out := oracle.Client{
		GoTransport: c.Implementation == "go-net-http", KeepAlive: c.KeepAlive,
		IdleTimeout: c.IdleTimeout.D(), HonorHint: c.HonorHint, HintParser: c.HintParser,
		HintBuffer: c.HintBuffer.D(), HintMax: c.HintMax.D(), MaxIdle: c.MaxIdle, MaxConns: c.MaxConns,
		LivenessCheck: c.LivenessCheck, Method: c.Method, BodyBytes: c.BodyBytes,
		Retry: oracle.Retry{Attempts: c.Retry.Attempts, On: c.Retry.On, IdempotentOnly: c.Retry.IdempotentOnly,
			ReusedOnly: c.Retry.ReusedOnly, ZeroBytesOnly: c.Retry.ZeroBytesOnly, Hidden: c.Retry.Hidden},
	}
	if c.Exec != nil {
		out.Real = "client.exec"
	}
	return out
}

func oracleBalancer(b *scenario.Balancer) *oracle.Balancer {
	if b == nil {
		return nil
	}
	return &oracle.Balancer{
		IdleTimeout: b.IdleTimeout.D(), BackendRTT: b.BackendNetwork.RTT.D(), BackendJitter: b.BackendNetwork.Jitter.D(),
		BackendKeepAlive: b.Backend.KeepAlive, BackendIdle: b.Backend.IdleTimeout.D(), BackendLiveness: b.Backend.LivenessCheck,
		OnBackendError: b.OnBackendError, Retries: b.Retries, ErrorStatus: b.ErrorStatus, Reuse: b.Reuse,
	}
}
