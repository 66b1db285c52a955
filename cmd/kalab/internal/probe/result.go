package probe

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Result is one probe's findings, each with its evidence.
type Result struct {
	URL, Host, Addr string
	Method          string
	Start           time.Time
	Elapsed         time.Duration
	Options         Options // the budgets it ran under (defaults filled in)

	Status       int
	Proto        string // of the first response: HTTP/1.1 or HTTP/1.0
	Server       string // the Server header
	CloseOnFirst bool   // the first response already said Connection: close
	Hint         Hint
	Idle         Idle
	Requests     Requests

	TLSVersion        string        // "" over plain TCP
	Resumed, TLSConns int           // TLS connections after the first that resumed a session, of TLSConns
	H2                H2            // over HTTP/2, when the server chose it by ALPN
	H2Streams         H2Streams     // the streams one HTTP/2 connection served before a GOAWAY
	H3                H3            // HTTP/3, when Alt-Svc advertises it
	RTT               time.Duration // the larger of ConnectRTT and RequestRTT
	ConnectRTT        time.Duration // median TCP connect
	RequestRTT        time.Duration // fastest request on a warm connection (0 when none)
	RTTSamples        int           // TCP connects
	Handshake         time.Duration // median TLS handshake

	Conns, Sent int  // connections opened and requests sent in all
	BudgetSpent bool // the time budget ran out
}

// ServerClose is the measured idle timeout as one value for a model (the bracket's upper
// end: a connection idle that long was found closed), and whether there is one.
func (r *Result) ServerClose() (time.Duration, bool) {
	if !r.Idle.Found {
		return 0, false
	}
	return r.Idle.High, true
}

// Resolution is the width of the idle bracket.
func (r *Result) Resolution() time.Duration { return r.Idle.High - r.Idle.Low }

// SafeClientIdle is the longest client idle timeout, in whole milliseconds, that never
// races the close: below the bracket's low end less one round trip (a request sent later
// can reach the server after it closed). False when nothing was measured.
func (r *Result) SafeClientIdle() (time.Duration, bool) {
	if !r.Idle.Found {
		return 0, false
	}
	return max((r.Idle.Low - r.RTT - 1).Truncate(time.Millisecond), 0), true
}

// HintVerdict compares the hint's timeout with the measured close: "matches" (the close
// lies within the resolution of it), "understates" (the server keeps connections longer
// than it says: a client trusting it is safe but reuses less), "overstates" (a client
// trusting it races the close), or "" when either is missing.
func (r *Result) HintVerdict() string {
	if r.Hint.Timeout == 0 || !r.Idle.Found {
		return ""
	}
	res := r.Options.Resolution
	switch {
	case r.Idle.High < r.Hint.Timeout-res:
		return "overstates"
	case r.Idle.Low > r.Hint.Timeout+res:
		return "understates"
	}
	return "matches"
}

// Write prints the findings, each with its evidence.
func (r *Result) Write(w io.Writer) {
	o := r.Options
	fmt.Fprintf(w, "kalab probe %s (%s %s, %s)\n", r.URL, r.Method, r.Addr, r.Start.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  budgets: %d connections, %d requests on one connection, %s in all; idle gaps up to %s, %d connections a round, resolution %s, request timeout %s\n\n",
		o.MaxConns, o.MaxRequests, o.Budget, o.MaxIdle, o.Parallel, o.Resolution, o.RequestTimeout)
	fmt.Fprintf(w, "  response:     %d, %s%s\n", r.Status, r.Proto, ifs(r.Server != "", ", Server: "+r.Server))
	switch {
	case r.Status >= 400:
		fmt.Fprintf(w, "                (an error status: what follows is how the server treats this error response, which may differ from a success)\n")
	case r.Status >= 300:
		fmt.Fprintf(w, "                (a redirect, not followed: what follows is how the server treats this response; probe the URL it names to measure that)\n")
	}
	fmt.Fprintf(w, "  idle close:   %s\n", r.idleText())
	fmt.Fprintf(w, "  hint:         %s\n", r.hintText())
	fmt.Fprintf(w, "  requests:     %s\n", r.requestsText())
	fmt.Fprintf(w, "  protocols:    %s\n", r.protoText())
	if r.H2.Offered {
		fmt.Fprintf(w, "  HTTP/2 idle:  %s\n", r.h2Text())
		fmt.Fprintf(w, "  HTTP/2 reuse: %s\n", r.h2StreamsText())
	}
	fmt.Fprintf(w, "  HTTP/3:       %s\n", r.h3Text())
	fmt.Fprintf(w, "  RTT:          %s (median of %d TCP connects %s; fastest request on a warm connection %s)%s\n", fmtDur(r.RTT), r.RTTSamples, fmtDur(r.ConnectRTT), fmtDur(r.RequestRTT),
		ifs(r.TLSVersion != "", fmt.Sprintf("; TLS handshake %s", fmtDur(r.Handshake))))
	if safe, ok := r.SafeClientIdle(); ok {
		fmt.Fprintf(w, "  client rule:  a client idle timeout of %s or less is safe (below close %s − RTT %s); above it, a request sent in the last round trip before the close races it\n",
			fmtDur(safe), fmtDur(r.Idle.Low), fmtDur(r.RTT))
	} else {
		fmt.Fprintf(w, "  client rule:  none: no idle close was measured\n")
	}
	fmt.Fprintf(w, "\n  spent: %d connections, %d requests, %s%s\n", r.Conns, r.Sent, r.Elapsed.Round(time.Millisecond), ifs(r.BudgetSpent, " (the time budget ran out)"))
}

func (r *Result) idleText() string {
	id := r.Idle
	if r.CloseOnFirst {
		return "none: the server closes the connection after every response (Connection: close), so no connection stays idle"
	}
	if !id.Found && id.Above == 0 && id.Limited != "" {
		return "not measured: " + id.Limited
	}
	if !id.Found {
		s := fmt.Sprintf("not seen: connections were still open after %s idle (above %s)", fmtDur(id.Above), fmtDur(id.Above))
		if id.Limited != "" {
			s += "; stopped by the budget: " + id.Limited
		}
		return s
	}
	var s string
	switch id.Kind {
	case Silent:
		s = fmt.Sprintf("silent drop after about %s (bracket %s .. %s, %d rounds): nothing arrived while idle and the next request %s; "+
			"a box on the path (NAT, firewall, balancer) forgot the flow, not a server timeout", fmtDur(id.High), fmtDur(id.Low), fmtDur(id.High), id.Rounds, nextText(id.Next))
	case KindData:
		s = fmt.Sprintf("%s idle: the server sent an unrequested response, then closed (seen on %d connection%s)", span(id.Low, id.High), id.Seen, ifs(id.Seen != 1, "s"))
	default:
		s = fmt.Sprintf("%s idle, closed by %s (seen as it arrived on %d idle connection%s)", span(id.Low, id.High), id.Kind, id.Seen, ifs(id.Seen != 1, "s"))
	}
	if id.Limited != "" {
		s += "; the budget cut the bisection short (" + id.Limited + "): the bracket is the result"
	}
	return s
}

// span is "a .. b", or one value when both read the same.
func span(a, b time.Duration) string {
	if fmtDur(a) == fmtDur(b) {
		return fmtDur(a)
	}
	return fmtDur(a) + " .. " + fmtDur(b)
}

func nextText(k string) string {
	switch k {
	case KindTimeout:
		return "got no answer (timeout)"
	case KindRST:
		return "was reset"
	case KindFIN:
		return "met a closed connection (EOF)"
	}
	return "failed (" + k + ")"
}

func (r *Result) hintText() string {
	if r.Hint.Raw == "" {
		return "none (no Keep-Alive header)"
	}
	s := "Keep-Alive: " + r.Hint.Raw
	switch r.HintVerdict() {
	case "matches":
		s += "; matches the measured close"
	case "understates":
		s += fmt.Sprintf("; understates the measured close (%s): a client that trusts it gives connections up early (safe, less reuse)", fmtDur(r.Idle.Low))
	case "overstates":
		s += fmt.Sprintf("; overstates the measured close (%s): a client that trusts it races the close", fmtDur(r.Idle.High))
	}
	return s
}

func (r *Result) requestsText() string {
	q := r.Requests
	switch {
	case q.Found:
		return fmt.Sprintf("max %d per connection (%s)", q.Max, q.How)
	case q.Limited != "":
		return fmt.Sprintf("not seen: %d served, then %s", q.Sent, q.Limited)
	}
	return fmt.Sprintf("not seen: above %d (%d served on one connection without a close; --max-requests)", q.Sent, q.Sent)
}

func (r *Result) protoText() string {
	var parts []string
	parts = append(parts, r.Proto)
	if r.TLSVersion == "" {
		parts = append(parts, "plain TCP (HTTP/2 not probed without TLS)")
		return strings.Join(parts, ", ")
	}
	if r.H2.Offered {
		h2 := "HTTP/2 by ALPN"
		if r.H2.MaxStreams > 0 {
			h2 += fmt.Sprintf(" (SETTINGS_MAX_CONCURRENT_STREAMS %d)", r.H2.MaxStreams)
		}
		parts = append(parts, h2)
	} else {
		parts = append(parts, "no HTTP/2 (ALPN chose http/1.1)")
	}
	parts = append(parts, fmt.Sprintf("%s, session resumed on %d of %d later connections", r.TLSVersion, r.Resumed, max(r.TLSConns-1, 0)))
	return strings.Join(parts, ", ")
}

func ifs(c bool, s string) string {
	if c {
		return s
	}
	return ""
}

// fmtDur writes a duration rounded for reading: ms below 10 s, else to 10 ms.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

func (r *Result) h2Text() string {
	h := r.H2
	var s string
	switch {
	case h.Err != "":
		return "not measured: " + h.Err
	case h.Found:
		s = fmt.Sprintf("closed by %s at %s idle after one request", h.Kind, fmtDur(h.Close))
	default:
		s = fmt.Sprintf("not seen: no GOAWAY and no close within %s idle (above %s; a silent drop cannot be seen without a request)", fmtDur(h.Above), fmtDur(h.Above))
	}
	if h.GoAway > 0 {
		s += fmt.Sprintf("; GOAWAY (error code %d) at %s", h.GoAwayErr, fmtDur(h.GoAway))
	} else if h.Found {
		s += "; no GOAWAY before it"
	}
	return s
}

func (r *Result) h2StreamsText() string {
	q := r.H2Streams
	switch {
	case q.Found:
		return fmt.Sprintf("GOAWAY after %d streams on one connection", q.Max)
	case q.Limited != "":
		return fmt.Sprintf("not seen: %d streams answered, then %s", q.Sent, q.Limited)
	}
	return fmt.Sprintf("not seen: above %d (%d streams answered on one connection without a GOAWAY; --max-requests)", q.Sent, q.Sent)
}

func (r *Result) h3Text() string {
	h := r.H3
	switch {
	case h.AltSvc == "":
		return "not advertised (no Alt-Svc header)"
	case h.Addr == "":
		return fmt.Sprintf("not advertised (Alt-Svc: %s names no h3)", h.AltSvc)
	case !h.Reached:
		return fmt.Sprintf("advertised at %s (Alt-Svc: %s), not reached: %s", h.Addr, h.AltSvc, h.Err)
	}
	s := fmt.Sprintf("advertised at %s and reached; ", h.Addr)
	if h.MaxIdleSent {
		s += fmt.Sprintf("its max_idle_timeout is %s (a transport parameter as sent, not measured; a connection uses the smaller of both ends')", fmtDur(h.MaxIdle))
	} else {
		s += "it sends no max_idle_timeout (no idle timeout of its own)"
	}
	switch {
	case h.ZeroRTT:
		s += "; 0-RTT accepted on a resumed connection"
	case h.ZeroRTTTried:
		s += "; a resumed connection's 0-RTT was not accepted"
	default:
		s += "; no session resumed, so 0-RTT not tried"
	}
	return s
}
