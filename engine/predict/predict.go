// Package predict is the oracle's view of a run: a scenario run's settings turned into the
// plan engine/oracle predicts from, and the prediction written beside what the run measured.
package predict

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/middlebox"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/shape"

	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Plan is the oracle's view of a run: its settings in scenario time, with the seeded
// pauses the load package draws for it (drawn at the run's scale, read back in scenario
// time: the draws scale with the range).
func Plan(st scenario.Settings) oracle.Plan {
	scale := st.TimeScale
	if scale <= 0 {
		scale = 1
	}
	l := st.Load
	p := oracle.Plan{
		Requests: l.Requests, Concurrency: l.Concurrency, Burst: l.Burst,
		OpenModel: l.Rate > 0,
		RTT:       st.Network.RTT.D(), Jitter: st.Network.Jitter.D(),
		InitialWindow: st.Network.InitialWindow, Bandwidth: int64(st.Network.Bandwidth),
		Backlog:  st.Server.Backlog > 0 || st.Server.AcceptDelay > 0,
		Server:   oracleServer(st),
		Client:   oracleClient(st),
		Balancer: oracleBalancers(st.Balancers()),
	}
	if boxes := st.Middleboxes(); len(boxes) > 0 {
		p.Middlebox = oracleMiddlebox(boxes[0], shape.Scale(scale))
	}
	if boxes := st.Middleboxes(); len(boxes) > 1 {
		for _, b := range boxes {
			p.Chain = append(p.Chain, oracleMiddlebox(b, shape.Scale(scale)))
		}
	}
	if ka, err := configure.TCPKeepalive(st, shape.Scale(scale)); err == nil && ka.Enable {
		// The probes the kernel sends (in whole seconds of real time), in scenario time.
		p.Client.KeepaliveIdle = time.Duration(float64(ka.Idle) / scale)
		p.Client.KeepaliveInterval = time.Duration(float64(ka.Interval) / scale)
	}
	p.Replay = l.Replay
	if st.Server.HTTP3() {
		p.HTTP3 = true
		p.QUIC = oracle.QUIC{ServerIdle: st.Server.IdleTimeout.D(), ClientIdle: st.Client.IdleTimeout.D(), Lossy: st.Network.Loss > 0,
			KeepAlivePeriod: st.Client.QUIC.KeepAlivePeriod.D(),
			// quic-go's default max_ack_delay (internal/protocol DefaultMaxAckDelay), which the
			// embedded server advertises: real time, so longer in scenario time at a small scale.
			MaxAckDelay: time.Duration(float64(25*time.Millisecond) / scale)}
	}
	for _, real := range load.Pauses(configure.Load(st, shape.Scale(scale))) {
		p.Pauses = append(p.Pauses, time.Duration(float64(real)/scale))
	}
	return p
}

// oracleMiddlebox is a box the run puts on the client's path, in scenario time.
func oracleMiddlebox(m *scenario.Middlebox, scale shape.Scale) *oracle.Middlebox {
	name := m.Preset
	if name == "" {
		name = "idle timeout " + m.IdleTimeout.String()
	}
	poll := middlebox.DefaultPoll(scale.D(m.IdleTimeout))
	return &oracle.Middlebox{Name: name, IdleTimeout: m.IdleTimeout.D(), Poll: time.Duration(float64(poll) / float64(scale)),
		Drop:      m.OnExpiry == string(middlebox.Drop),
		ResetNext: m.OnExpiry == string(middlebox.Reset) && m.ResetAt == string(middlebox.AtNextSegment) && m.ResetTo != "server"}
}

func oracleServer(st scenario.Settings) oracle.Server {
	s := st.Server
	out := oracle.Server{
		HTTP2: shape.HTTP2(st), IdleTimeout: s.IdleTimeout.D(),
		MaxRequests: s.MaxRequests, CloseEvery: s.CloseEvery, Events: len(s.Events), Status: s.Response.Status, Delay: s.Response.Delay.D(),
		BodyBytes: s.Response.BodyBytes, SessionTickets: s.SessionTickets,
	}
	if s.TLS {
		out.TLS = string(s.TLSVersion)
		if out.TLS == "" {
			out.TLS = "1.3" // the embedded server's default
		}
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
		// A liveness check that sees only a FIN (curl's, liveness_eof_only) is blind to a
		// TLS close_notify, which arrives first: over TLS it never drops a closed connection.
		LivenessCheck: c.LivenessCheck && !(c.LivenessEOFOnly && st.Server.TLS), Method: c.Method, BodyBytes: c.BodyBytes,
		AwaitedCreationOrder: c.Scheduling == "creation-order" && !c.CallerYields,
		DropEmptyPool:        c.Scheduling == "creation-order" && c.DropEmptyPool,
		SessionResumption:    c.SessionResumption,
		Retry: oracle.Retry{Attempts: c.Retry.Attempts, On: c.Retry.On, IdempotentOnly: c.Retry.IdempotentOnly,
			ReusedOnly: c.Retry.ReusedOnly, ZeroBytesOnly: c.Retry.ZeroBytesOnly, Hidden: c.Retry.Hidden},
	}
	if c.Exec != nil {
		out.Real = "client.exec"
	}
	out.Timeout = c.Timeout.D()
	for h := range c.Headers {
		if strings.EqualFold(h, "Idempotency-Key") || strings.EqualFold(h, "X-Idempotency-Key") {
			out.IdempotencyKey = true
		}
	}
	return out
}

// oracleBalancers is the run's balancers as the oracle reads them: the first one, and
// behind a chain every one of them in path order (the oracle decides which link it walks).
func oracleBalancers(bs []*scenario.Balancer) *oracle.Balancer {
	if len(bs) == 0 {
		return nil
	}
	one := func(i int) oracle.Balancer {
		b := bs[i]
		return oracle.Balancer{
			IdleTimeout: b.IdleTimeout.D(), BackendRTT: b.BackendNetwork.RTT.D(), BackendJitter: b.BackendNetwork.Jitter.D(),
			BackendKeepAlive: b.Backend.KeepAlive, BackendIdle: b.Backend.IdleTimeout.D(), BackendLiveness: b.Backend.LivenessCheck,
			OnBackendError: b.OnBackendError, Retries: b.Retries, ErrorStatus: b.ErrorStatus, Reuse: b.Reuse, Name: balancerName(b, i), Real: b.Exec,
		}
	}
	out := one(0)
	if len(bs) > 1 {
		for i := range bs {
			out.Chain = append(out.Chain, one(i))
		}
	}
	return &out
}

// balancerName names balancer i of a path: its preset, or its place.
func balancerName(b *scenario.Balancer, i int) string {
	if b.Preset != "" {
		return b.Preset
	}
	return fmt.Sprintf("balancer %d", i+1)
}

// Record is the prediction of p (the run's Plan, at time scale scale) beside the run's
// measured counts. The bounds allow for the lateness the run's own timers showed: the p99
// lateness (the statistic its timing is judged on) of its link, schedule and idle-close
// timers, summed, in scenario time. Each can move a pause against a window edge: a late
// pause lengthens it, a late close or a late FIN shortens it. A count outside its bounds
// is a model disagreement.
func Record(p oracle.Plan, scale float64, tm *report.Timing, m check.Metrics) *report.Predicted {
	lateness := Lateness(tm, scale)
	pred := oracle.Predict(p, lateness)
	flat := m.Flat()
	out := &report.Predicted{Rule: pred.Rule, LatenessMs: math.Round(pred.LatenessMs*1000) / 1000, Counts: []report.PredictedCount{}}
	var off []string
	for _, c := range pred.Counts {
		pc := report.PredictedCount{
			Metric: c.Metric, Predicted: c.Predicted, Value: c.Value, Lo: c.Lo, Hi: c.Hi, AtMost: c.AtMost,
			Measured: flat[c.Metric], Reason: c.Reason, Window: c.Window, Requests: c.Requests, Uncertain: c.Uncertain,
		}
		switch {
		case !c.Predicted:
			pc.Verdict = report.ModelNotPredicted
		case pc.Measured < float64(c.Lo) || pc.Measured > float64(c.Hi):
			pc.Verdict = report.ModelDisagree
			off = append(off, fmt.Sprintf("%s measured %g, predicted %s", c.Metric, pc.Measured, bounds(c)))
		default:
			pc.Verdict = report.ModelAgree
		}
		out.Counts = append(out.Counts, pc)
	}
	if len(off) > 0 {
		out.Disagreement, out.Reason = true, strings.Join(off, "; ")
	}
	return out
}

func bounds(c oracle.Count) string {
	switch {
	case c.AtMost:
		return fmt.Sprintf("at most %d", c.Value)
	case c.Lo == c.Hi:
		return fmt.Sprint(c.Value)
	}
	return fmt.Sprintf("%d (%d..%d at the run's lateness)", c.Value, c.Lo, c.Hi)
}

// Lateness is the lateness the prediction allows for, in scenario time.
func Lateness(tm *report.Timing, scale float64) time.Duration {
	if tm == nil {
		return 0
	}
	if scale <= 0 {
		scale = 1
	}
	var sum float64
	for _, src := range []string{judge.SrcLink, judge.SrcSchedule, judge.SrcIdleClose} {
		sum += tm.Sources[src].P99
	}
	return time.Duration(sum / scale * float64(time.Millisecond))
}
