// Package fault names faults that can be compiled into the engine, only under the build
// tag kalabfault, to prove that the checks guarding each modelled behaviour catch it
// broken: .ci/mutate builds with the tag, sets KALAB_FAULT to one name at a time, runs the
// tests and scenario files that guard it, and fails when one still passes. Without the tag
// On is a constant false and the engine carries no fault.
//
// The engine and the command line both use it; it is kalab's own, not a stable API for
// other modules.
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
	// UndiciNoReconnectInPlace: a request of undici's creation-order pool passes over a free
	// client whose connection closed and takes a later free client that still has one,
	// instead of reconnecting in the first.
	UndiciNoReconnectInPlace = "undici-no-reconnect-in-place"
	// UndiciHintThreshold1s: the undici hint parser subtracts 1 s from the server's hint
	// (undici before nodejs/undici#3145) instead of the preset's hint_buffer.
	UndiciHintThreshold1s = "undici-hint-threshold-1s"
	// ZeroRTTAnyMethod: an HTTP/3 client with zero_rtt safe sends every method in 0-RTT,
	// POST included, as zero_rtt all does.
	ZeroRTTAnyMethod = "zero-rtt-any-method"
	// OracleQUICMax: the oracle takes the larger of the two ends' QUIC idle timeouts for the
	// negotiated one, instead of the smaller.
	OracleQUICMax = "oracle-quic-max"
	// PendingInputEverywhere: liveness_eof_only is dropped, so a pooled connection with
	// unread input is discarded in every curl release (7.88.x included).
	PendingInputEverywhere = "pending-input-everywhere"
	// TLSResumptionDropped: the model clients, over TCP and over HTTP/3, keep no TLS session
	// cache, so no new connection resumes a session whatever client.session_resumption says.
	TLSResumptionDropped = "tls-resumption-dropped"
	// TLSResumptionForced: the TCP model clients keep a TLS session cache and resume
	// whatever client.session_resumption says.
	TLSResumptionForced = "tls-resumption-forced"
	// UndiciCloseFreesAtOnce: in undici's creation-order pool a response that closed its
	// connection frees its client at once, as a failed request does, instead of with the
	// socket's close event after the next awaited request went to another client.
	UndiciCloseFreesAtOnce = "undici-close-frees-at-once"
	// HiddenResendDropped: a client whose re-sends are the library's own (retry.hidden,
	// libcurl's re-send on a dead reused connection) does not re-send.
	HiddenResendDropped = "hidden-resend-dropped"
	// TCPKeepaliveDropped: the TCP model clients send no keepalive probes whatever
	// client.tcp_keepalive says.
	TCPKeepaliveDropped = "tcp-keepalive-dropped"
	// ClientIdleIgnored: a TCP model client keeps a pooled connection past its own
	// client.idle_timeout, until the server closes it.
	ClientIdleIgnored = "client-idle-ignored"
	// QUICIdleMax: the HTTP/3 client advertises the larger of its own and the server's idle
	// timeouts, so the connection ends at the larger instead of the smaller.
	QUICIdleMax = "quic-idle-max"
	// QUICIdlePings: an HTTP/3 client with no keep-alive period PINGs every 10 s (quic-go's
	// http3 default) while its connection is idle.
	QUICIdlePings = "quic-idle-pings"
	// ProbeIdleUnread: kalab probe sleeps through an idle gap instead of reading the
	// socket, so a FIN or RST is seen only on the next request, as if the drop were silent.
	ProbeIdleUnread = "probe-idle-unread"
	// ReloadKeepsIdle: a reload of the embedded server (server.events goaway) stops taking
	// new connections on the old generation but leaves its idle connections open, instead of
	// closing them at once as Go's Shutdown and nginx -s reload do.
	ReloadKeepsIdle = "reload-keeps-idle"
	// DrainAccepts: a drain of the embedded server (server.events drain) keeps its listener
	// open and closes each connection made after it at once, so the client sees the close
	// on its first request (eof) instead of a refused connect, as Go's Shutdown and nginx -s
	// quit give.
	DrainAccepts = "drain-accepts"
	// GoAwayResendDropped: kalab's HTTP/2 client hands a stream above a GOAWAY's last
	// stream id to the caller instead of re-sending it on a new connection, as
	// client.http2_goaway fail does, whatever the field says (Go's Transport re-sends it).
	GoAwayResendDropped = "goaway-resend-dropped"
	// DeregisterReuses: behind a balancer, a deregistration (server.events deregister)
	// leaves the balancer's pool as it was, so it keeps sending requests on its connections
	// to the old target, instead of stopping as AWS ALB does for a deregistering target.
	DeregisterReuses = "deregister-reuses"
	// ChainCountsFirst: behind a chain of balancers the flat metrics take each balancer
	// count from one balancer (the first, which flattens last) instead of adding the
	// balancers' answers, re-sends and backend connections up.
	ChainCountsFirst = "chain-counts-first"
)

// Names lists every fault, for the harness.
var Names = []string{HintIgnored, CloseUndelayed, HandshakeShort, IdleCloseDouble, HiddenUncounted, ProbeBlind, IdleReaderHeld, UndiciAsNode, OracleBatchesDropped, QUICClientIdleDropped,
	UndiciNoReconnectInPlace, UndiciHintThreshold1s, ZeroRTTAnyMethod, OracleQUICMax, PendingInputEverywhere, TLSResumptionDropped, TLSResumptionForced, UndiciCloseFreesAtOnce, HiddenResendDropped, TCPKeepaliveDropped, ClientIdleIgnored, QUICIdleMax, QUICIdlePings, ProbeIdleUnread, ReloadKeepsIdle, DrainAccepts, GoAwayResendDropped, DeregisterReuses, ChainCountsFirst}
