package compile

import (
	"fmt"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// chromiumPing is how long Chromium lets a request wait for its answer before it sends a
// PING: quiche's kPingTimeoutSecs (quic_constants.h), sent only while HTTP/3 has a stream
// open (quic_ping_manager.cc: "Don't send a ping unless the application (ie: HTTP/3) says
// to"; quic_spdy_session.cc says so while requests are outstanding).
const chromiumPing = 15 * time.Second

// chromiumPingRefused says why an HTTP/3 run of the chromium preset cannot have a verdict:
// a request still waiting when Chromium's PING would go out, on a path that forgot the
// connection meanwhile. A middlebox that forgets the flow before the answer crosses it
// drops the answer, so the request is still open at 15 s whatever the delay, and the PING
// rebinds the flow to a port the server follows; an idle timeout of both ends between
// 15 s and the answer is reset by the PING. Chromium then gets its answer; the preset
// sends no PING and loses the request. "" when the run does not depend on the PING: the
// answer crosses before anything forgets, or the connection or the request ends before
// 15 s on Chromium's side too.
func chromiumPingRefused(st scenario.Settings) string {
	if !st.Server.HTTP3() || st.Client.Preset != "chromium" || st.Client.Exec != nil {
		return ""
	}
	answer := st.Server.Response.Delay.D() + st.Network.RTT.D() // when the answer crosses back, at the latest
	idle := minPositive(st.Client.IdleTimeout.D(), st.Server.IdleTimeout.D())
	if (idle > 0 && idle <= chromiumPing) || (st.Client.Timeout.D() > 0 && st.Client.Timeout.D() <= chromiumPing) {
		return "" // the connection or the request ends before the PING, in Chromium too
	}
	what, forget := "", time.Duration(0)
	if mb := st.Middlebox; mb != nil && mb.IdleTimeout.D() > 0 && mb.IdleTimeout.D() < answer {
		what, forget = "the middlebox's idle_timeout", mb.IdleTimeout.D()
	} else if idle > 0 && idle < answer {
		what, forget = "the idle timeout", idle
	}
	if forget == 0 {
		return ""
	}
	return fmt.Sprintf("not modelled: the request waits %v for its answer and %s (%v) forgets the connection first; Chromium PINGs %v into a request still open, which keeps or rebinds the connection so that the answer arrives, and the chromium preset sends no such PING, so the model cannot say what Chromium does here",
		st.Server.Response.Delay.D(), what, forget, chromiumPing)
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
