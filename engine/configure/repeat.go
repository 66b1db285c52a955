package configure

import "github.com/kalab-dev/kalab/engine/scenario"

// Notes on what a run on the virtual clock leaves to Go's scheduler. The in-memory network
// orders every event it schedules (vnet.Network.Order), so runs over HTTP/1.1 repeat to the
// request and to the byte. Inside a multiplexing library it cannot reach: Go's HTTP/2
// server picks among frames ready at once with a select (net/http h2_bundle.go, serverConn.serve),
// which decides how frames share TLS records; quic-go packs frames into packets as its
// connection's goroutine finds them queued and skips packet numbers at random
// (internal/ackhandler/packet_number_generator.go), and restarts its idle timer from the
// later of the last packet received and the first ack-eliciting packet sent after it
// (connection.go, idleTimeoutStartTime, v0.65.0 lines 918-924), so whether an
// acknowledgement went out before or after the last packet came in moves an idle close by
// a trip; and Go's Transport hands a new HTTP/2
// connection to every request waiting for one at once (transport.go, tryPutIdleConn), whose
// goroutines then race for its streams.
const (
	noteH2Bytes = "virtual clock: bytes_up and bytes_down may differ from run to run by a TLS record or a few: " +
		"Go's HTTP/2 code batches frames into writes as its goroutines find them ready; the other counts repeat"
	noteH2Waiters = "virtual clock: which of the requests waiting together for a new HTTP/2 connection rides its first streams " +
		"is Go's scheduler's choice, so the requests file's per-request fields may differ from run to run; the counts repeat"
	noteH3Bytes = "virtual clock: bytes_up and bytes_down may differ from run to run by up to a few hundred bytes, " +
		"and middlebox_dropped_datagrams by a datagram or two: " +
		"quic-go packs frames into packets, and sends its acknowledgements, as its goroutines find them ready, " +
		"and skips packet numbers at random; the other counts repeat"
	noteH3Closes = "virtual clock: the connections file's close times may differ from run to run by a trip across the link: " +
		"quic-go restarts its idle timer from the later of the last packet it received and the first ack-eliciting one it sent after it, " +
		"which its goroutines decide; the counts repeat"
)

// Unrepeatable returns the notes for a run on the virtual clock whose settings are st:
// what of its record Go's scheduler, not the plan, decides. None for a real-clock run.
func Unrepeatable(st scenario.Settings, virtual bool) []string {
	s, c := st.Server, st.Client
	switch {
	case !virtual:
		return nil
	case s.HTTP3():
		return []string{noteH3Bytes, noteH3Closes}
	case s.HTTP == "2" && c.Exec == nil && !s.Real() && c.HTTP2 != "never" && (c.HTTP2 != "tls" || s.TLS):
		if st.Load.Concurrency > 1 {
			return []string{noteH2Bytes, noteH2Waiters}
		}
		return []string{noteH2Bytes}
	}
	return nil
}
