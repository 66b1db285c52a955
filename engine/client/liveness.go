package client

// pendinger is an in-memory connection that can say, without blocking, what a read would
// find: data, the peer's FIN, or a reset.
type pendinger interface {
	Pending() (data, eof, reset bool)
}

// alive is the liveness peek on a pooled connection: the socket's (alive), or the
// in-memory connection's with the same rule.
func (c *pconn) alive(eofOnly bool) bool {
	if c.mem != nil {
		data, eof, reset := c.mem.Pending()
		if data {
			return eofOnly
		}
		return !eof && !reset
	}
	return alive(c.raw, eofOnly)
}
