package client

// Why the model client closed a connection itself, as its connection records say it
// (closed_by client). Like net/http's tryPutIdleConn refusals (errKeepAlivesDisabled,
// errConnBroken, errTooManyIdle), each close the pool decides has a name.
const (
	ReasonBroken        = "broken"         // an attempt on it failed: the write, the wait for the response or its read
	ReasonKeepAliveOff  = "keepalive_off"  // keep_alive: false: one request per connection
	ReasonResponseClose = "response_close" // the response said Connection: close (or was HTTP/1.0 without keep-alive)
	ReasonHint          = "hint"           // the server's Keep-Alive hint leaves no idle time to pool it for
	ReasonUnread        = "unread"         // bytes arrived after the response: the connection is out of step
	ReasonTooManyIdle   = "too_many_idle"  // the idle pool was full (max_idle)
	ReasonIdle          = "idle"           // it stayed idle past its lifetime (idle_timeout, or the hint's)
	ReasonEnd           = "end"            // the client closed at the end of the run
	ReasonPoolClosed    = "pool_closed"    // undici 7's Agent closed the connection's pool (Config.DropEmptyPool)
)

// CloseReasoner is a client that can say why it closed each connection it closed itself,
// by connection id (Event.ConnID).
type CloseReasoner interface {
	CloseReasons() map[uint64]string
}
