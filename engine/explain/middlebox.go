package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// paramBox is a middlebox as the run's params give it.
type paramBox struct {
	Preset      string `json:"preset"`
	IdleTimeout string `json:"idle_timeout"`
	OnExpiry    string `json:"on_expiry"`
	ResetAt     string `json:"reset_at"`
	ResetTo     string `json:"reset_to"`
}

// paramBoxes are the run's middleboxes in path order from the client: the params give one
// box as an object and a chain as a list.
type paramBoxes []paramBox

func (p *paramBoxes) UnmarshalJSON(b []byte) error { return oneOrList(b, (*[]paramBox)(p)) }

// oneOrList decodes b, one object or a list of them, into *dst as a list; null leaves it
// empty.
func oneOrList[T any](b []byte, dst *[]T) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		return json.Unmarshal(b, dst)
	}
	var one *T
	if err := json.Unmarshal(b, &one); err != nil || one == nil {
		return err
	}
	*dst = []T{*one}
	return nil
}

// first is the box the client dials; nil without one.
func (p paramBoxes) first() *paramBox {
	if len(p) == 0 {
		return nil
	}
	return &p[0]
}

// forgetter is the box a request sent after idle ms met on a forgotten flow: the first on
// the path whose idle timeout the pause outlasted (the request's segment crosses the boxes
// in order), unless the client's probes kept the first box's flow alive (they reach only
// the first box); i is its place on the path, nil when none forgot.
func (r *Run) forgetter(idle float64) (m *paramBox, i int) {
	for i := range r.params.Middlebox {
		timeout := msD(dur(r.params.Middlebox[i].IdleTimeout))
		if timeout <= 0 || idle < timeout || (i == 0 && r.probesRefresh(timeout)) {
			continue
		}
		return &r.params.Middlebox[i], i
	}
	return nil, 0
}

// boxName names a box of the path: "the middlebox (preset)" for a lone box, "box 2 of 3 on
// the path (preset)" in a chain.
func (r *Run) boxName(m *paramBox, i int) string {
	name := "the middlebox"
	if n := len(r.params.Middlebox); n > 1 {
		name = fmt.Sprintf("box %d of %d on the path", i+1, n)
	}
	if m.Preset != "" {
		name += " (" + m.Preset + ")"
	}
	return name
}

// middleboxFacts tells the story of a request on a connection whose flow a middlebox on
// the path had forgotten: the connection carried nothing for longer than the box's idle
// timeout (lastSeen is when its last response reached the client; the boxes sit at the
// client's side of the path), so the box forgot the flow, and what the client sent next
// went into the void or drew the box's reset. Behind a chain it names the box the request
// met first. It says what would have kept the flow. ok is false when the run has no
// middlebox, the pause was shorter than every box's timeout, or the client's TCP keepalive
// probes kept the flow alive.
func (r *Run) middleboxFacts(b *strings.Builder, q report.Request, lastSeen float64) bool {
	idle := q.StartMs - lastSeen
	m, i := r.forgetter(idle)
	if m == nil {
		return false
	}
	timeout := msD(dur(m.IdleTimeout))
	fmt.Fprintf(b, " The connection then sat idle %s, past the %s idle timeout of %s: the box forgot the flow at about %s, %s before the request.",
		ms(idle), ms(timeout), r.boxName(m, i)+onPath(len(r.params.Middlebox)), ms(lastSeen+timeout), ms(idle-timeout))
	b.WriteString(" " + r.voidFate(q, m))
	if r.h3() {
		fmt.Fprintf(b, " A keep-alive PING more often than every %s (client.quic.keepalive_period) would have kept the flow.", ms(timeout))
		return true
	}
	fmt.Fprintf(b, " A client idle timeout below %s (client.idle_timeout) would have closed the connection before the box forgot it, and TCP keepalive probes more often than that (client.tcp_keepalive idle and interval) would have kept the flow alive.", ms(timeout))
	return true
}

// onPath is what a lone box's name is followed by: " on the path" (a chain's names say it).
func onPath(boxes int) string {
	if boxes > 1 {
		return ""
	}
	return " on the path"
}

// voidFate says what became of a request sent on a forgotten flow, by what box m does
// after expiry.
func (r *Run) voidFate(q report.Request, m *paramBox) string {
	toClient := m.ResetTo == "client" || m.ResetTo == "both"
	switch {
	case m.OnExpiry == "reset" && m.ResetAt == "next-segment" && toClient:
		return fmt.Sprintf("Its %s was the flow's next segment, and the box answered it with a reset.", method(r.params.Client.Method))
	case m.OnExpiry == "reset" && toClient:
		return "The box had reset the flow when it forgot it; the client's pool had not yet seen that reset when it sent the request."
	case q.Class == "timeout":
		return fmt.Sprintf("Its %s went into the void: the box dropped it, and nothing came back until the client gave up after %s (client.timeout).", method(r.params.Client.Method), r.params.Client.Timeout)
	}
	return fmt.Sprintf("Its %s went into the void: the box dropped it.", method(r.params.Client.Method))
}

// probesRefresh reports whether the client's TCP keepalive probes come often enough to keep
// a flow alive past a box's idle timeout: the first after the keepalive idle time, then one
// every interval.
func (r *Run) probesRefresh(timeout float64) bool {
	ka := r.params.Client.TCPKeepalive
	idle, every := msD(dur(ka.Idle)), msD(dur(ka.Interval))
	return idle > 0 && idle < timeout && every > 0 && every < timeout
}
