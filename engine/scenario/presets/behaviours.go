package presets

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/fault"
)

// Behaviour is one rule that sets a preset apart from the others, and what guards it: the
// truth file whose compare against the real program fails when the model breaks the rule,
// and the fault (engine/fault) that breaks it, which .ci/faults runs that truth
// file against (`FAULT run FILE`, or `FAULT model FILE`).
type Behaviour struct {
	Name string // a few words: "reconnect in place"
	Rule string // the rule, in one line
	// Truth are the truth files, scenarios/truth/NAME.yaml, one per release of the real
	// program checked, and Compare the runs of them that their compares hold together; none
	// when no truth file compares the rule.
	Truth   []string
	Compare string
	// Fault breaks the rule in a kalabfault build; "" when none does, and then nothing
	// proves that Truth would see the rule broken.
	Fault string
}

// Guarded says whether a truth file is shown to catch the rule broken: it has a truth file
// and a fault that .ci/faults runs it against.
func (b Behaviour) Guarded() bool { return len(b.Truth) > 0 && b.Fault != "" }

// behaviours are the client presets' distinguishing rules, by preset.
var behaviours = map[string][]Behaviour{
	"undici": {
		{Name: "creation-order pool", Rule: "a request takes the first free client in creation order; the one whose response just arrived is free a tick later, so an awaited loop alternates two connections",
			Truth: []string{"scenarios/truth/undici.yaml"}, Compare: "real-awaited vs model-awaited, the stale races", Fault: fault.UndiciAsNode},
		{Name: "reconnect in place", Rule: "a client whose connection closed keeps its place and reconnects when the next request reaches it, before a later client with a live connection",
			Truth: []string{"scenarios/truth/undici-edges.yaml", "scenarios/truth/undici-7-edges.yaml"}, Compare: "real-in-place vs model-in-place", Fault: fault.UndiciNoReconnectInPlace},
		{Name: "hint rule", Rule: "a Keep-Alive hint minus 2 s replaces keepAliveTimeout (at most 600 s); nothing left: the connection is not pooled",
			Truth: []string{"scenarios/truth/undici-edges.yaml", "scenarios/truth/undici-7-edges.yaml"}, Compare: "real-hint vs model-hint", Fault: fault.UndiciHintThreshold1s},
		{Name: "close holds the client", Rule: "a response that closes its connection frees its client only on the socket's close event, after the next awaited request went elsewhere",
			Truth: []string{"scenarios/truth/undici.yaml"}, Compare: "real-max5 vs model-max5, real-max4 vs model-max4", Fault: fault.UndiciCloseFreesAtOnce},
		{Name: "own idle timeout", Rule: "keepAliveTimeout 4 s: the client closes a connection idle that long, whatever the server keeps",
			Truth: []string{"scenarios/truth/undici-edges.yaml", "scenarios/truth/undici-7-edges.yaml"}, Compare: "real-own-idle vs model-own-idle", Fault: fault.ClientIdleIgnored},
		{Name: "TLS resumption", Rule: "each new connection of the origin's pool resumes the TLS session of an earlier one",
			Truth: []string{"scenarios/truth/undici-edges.yaml"}, Compare: "real-resume vs model-resume", Fault: fault.TLSResumptionDropped},
	},
	"node-agent": {
		{Name: "hint rule", Rule: "a Keep-Alive hint minus 1 s is used only when shorter than the agent's own timeout; nothing left: the connection is not pooled",
			Truth: []string{"scenarios/truth/node-agent.yaml"}, Compare: "real-apache vs model-apache", Fault: fault.HintIgnored},
		{Name: "TCP keepalive probes", Rule: "a pooled socket probes after 1 s idle, every 1 s, which keeps a middlebox's flow",
			Truth: []string{"scenarios/truth/middlebox-keepalive.yaml"}, Compare: "real vs model, behind a box that forgets flows idle for 2.5 s", Fault: fault.TCPKeepaliveDropped},
	},
	"go-default": {
		{Name: "silent re-send", Rule: "a request on a reused connection that died before any byte of the response is re-sent on a new one, unseen by the caller (hidden_retries)",
			Truth: []string{"scenarios/truth/go.yaml"}, Compare: "real-race vs model-race", Fault: fault.HiddenUncounted},
		{Name: "GOAWAY re-send", Rule: "over HTTP/2, a stream above a GOAWAY's last stream id is re-sent on a new connection, unseen by the caller; after a drain the re-send's connect fails",
			Truth: []string{"scenarios/truth/deploys-h2.yaml"}, Compare: "real-goaway vs model-goaway, real-drain vs model-drain", Fault: fault.GoAwayResendDropped},
		{Name: "idle pool of 2", Rule: "MaxIdleConnsPerHost 2: of more connections given back at once, all but 2 close (Go's own default, so no fault of kalab's breaks it)",
			Truth: []string{"scenarios/truth/go.yaml"}, Compare: "real-pool vs model-pool"},
	},
	"python-requests": {
		{Name: "no TLS resumption", Rule: "every new connection makes a full TLS handshake",
			Truth: []string{"scenarios/truth/python-requests.yaml"}, Compare: "real-fin-first vs model-fin-first, tls_resumed", Fault: fault.TLSResumptionForced},
	},
	"curl-multi": {
		{Name: "pending-input rule", Rule: "8.0.0 and later drop a pooled connection with unread input (a TLS close_notify); 7.88.x take it for alive, reuse it and re-send",
			Truth: []string{"scenarios/truth/libcurl.yaml"}, Compare: "real-fin-first vs model-fin-first at 7.88.1", Fault: fault.PendingInputEverywhere},
		{Name: "silent re-send", Rule: "a reused connection that died with 0 bytes received is re-sent on a fresh one, up to 5 times, any method, unseen by the caller",
			Truth: []string{"scenarios/truth/libcurl.yaml"}, Compare: "real-race vs model-race, hidden_retries", Fault: fault.HiddenResendDropped},
	},
	"chromium": {
		{Name: "negotiated idle timeout", Rule: "a QUIC connection ends when the smaller of the server's and Chromium's 30 s max_idle_timeout passes",
			Truth: []string{"scenarios/truth/chromium.yaml"}, Compare: "real-own-idle vs model-own-idle", Fault: fault.QUICIdleMax},
		{Name: "no PING while idle", Rule: "no PING while no request is open, so an idle connection times out and a NAT forgets its flow",
			Truth: []string{"scenarios/truth/chromium.yaml"}, Compare: "real-idle vs model-idle, real-own-idle vs model-own-idle, real-nat vs model-nat", Fault: fault.QUICIdlePings},
		{Name: "TLS resumption", Rule: "each new QUIC connection to the origin resumes the TLS session of an earlier one (kalab's server counts Chromium's)",
			Truth: []string{"scenarios/truth/chromium.yaml"}, Compare: "real-idle vs model-idle, real-own-idle vs model-own-idle, tls_resumed", Fault: fault.TLSResumptionDropped},
		{Name: "0-RTT methods", Rule: "on a resumed connection a GET or HEAD goes in 0-RTT, a POST waits for the handshake",
			Truth: []string{"scenarios/truth/chromium-zero-rtt.yaml"}, Compare: "real-post vs model-post, real-get vs model-get", Fault: fault.ZeroRTTAnyMethod},
		{Name: "oracle's idle rule", Rule: "the oracle predicts a connection per pause of at least the smaller of the two idle timeouts; in a truth file the model runs it predicts must agree",
			Truth: []string{"scenarios/truth/chromium-zero-rtt.yaml"}, Compare: "model-get and model-post against the oracle", Fault: fault.OracleQUICMax},
	},
}

func init() {
	for name, list := range behaviours {
		Client[name].Behaviours = list
	}
}

// TruthScore counts the client presets' behaviours and those a truth file is shown to
// catch broken (Guarded).
func TruthScore() (guarded, listed int) {
	for _, list := range behaviours {
		for _, b := range list {
			listed++
			if b.Guarded() {
				guarded++
			}
		}
	}
	return guarded, listed
}

// BehaviourTable is the client presets' behaviours as a Markdown table, one row each, in
// the presets' name order.
func BehaviourTable() string {
	var s strings.Builder
	s.WriteString("| preset | behaviour | rule | truth file (compared runs) | fault |\n|---|---|---|---|---|\n")
	for _, name := range Names(Client) {
		for _, b := range Client[name].Behaviours {
			truth, f := "none", "none"
			if len(b.Truth) > 0 {
				truth = fmt.Sprintf("`%s` (%s)", strings.Join(b.Truth, "`, `"), b.Compare)
			}
			if b.Fault != "" {
				f = "`" + b.Fault + "`"
			}
			fmt.Fprintf(&s, "| `%s` | %s | %s | %s | %s |\n", name, b.Name, b.Rule, truth, f)
		}
	}
	guarded, listed := TruthScore()
	fmt.Fprintf(&s, "\n%d of %d behaviours have a fault that their truth file is shown to catch.\n", guarded, listed)
	return s.String()
}
