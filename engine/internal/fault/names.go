// Package fault names faults that can be compiled into the engine, only under the build
// tag kalabfault, to prove that the checks guarding each modelled behaviour catch it
// broken: .ci/mutate builds with the tag, sets KALAB_FAULT to one name at a time, runs the
// tests and scenario files that guard it, and fails when one still passes. Without the tag
// On is a constant false and the engine carries no fault.
package fault

// The faults, each a behaviour of the model broken on purpose.
const (
	// HintIgnored: the model client ignores the server's Keep-Alive: timeout=N hint.
	HintIgnored = "hint-ignored"
	// CloseUndelayed: the link forwards a FIN or a reset at once, without the one-way delay.
	CloseUndelayed = "close-undelayed"
	// HandshakeShort: a new connection's handshake is one RTT short.
	HandshakeShort = "handshake-short"
	// IdleCloseDouble: the embedded server closes an idle connection at twice its timeout.
	IdleCloseDouble = "idle-close-double"
	// HiddenUncounted: the go-net-http client does not count Go's own silent re-sends.
	HiddenUncounted = "hidden-uncounted"
	// ProbeBlind: the middlebox does not see segments without data (TCP keepalive probes),
	// so only data keeps a flow alive.
	ProbeBlind = "probe-blind"
	// IdleReaderHeld: an idle link's readers stay parked goroutines, with the stacks their
	// work grew, instead of leaving the wait to the idle parker.
	IdleReaderHeld = "idle-reader-held"
	// UndiciAsNode: the undici preset's pool is node-agent's (lifo, a connection given back
	// at once) instead of undici's creation order with its one-tick late release.
	UndiciAsNode = "undici-as-node"
	// OracleBatchesDropped: the oracle declines to predict runs of concurrent batches, as
	// if their prediction rule were removed.
	OracleBatchesDropped = "oracle-batches-dropped"
	// QUICClientIdleDropped: the HTTP/3 client advertises no max_idle_timeout of its own
	// (quic-go's default 30 s) whatever client.idle_timeout says.
	QUICClientIdleDropped = "quic-client-idle-dropped"
	// ProbeIdleUnread: kalab probe sleeps through an idle gap instead of reading the
	// socket, so a FIN or RST is seen only on the next request, as if the drop were silent.
	ProbeIdleUnread = "probe-idle-unread"
)

// Names lists every fault, for the harness.
var Names = []string{HintIgnored, CloseUndelayed, HandshakeShort, IdleCloseDouble, HiddenUncounted, ProbeBlind, IdleReaderHeld, UndiciAsNode, OracleBatchesDropped, QUICClientIdleDropped, ProbeIdleUnread}
