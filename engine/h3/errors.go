package h3

import (
	"context"
	"errors"
	"io"

	"github.com/quic-go/quic-go"

	"github.com/kalab-dev/kalab/engine/client"
)

// Classify maps an error from a QUIC dial, handshake or request to kalab's error classes.
// QUIC has no connection refusal and no FIN: a peer that is gone is silent, and the client
// learns it only from its own timers; a peer that lost its state answers with a stateless
// reset; a peer that gives up closes with CONNECTION_CLOSE or resets the stream.
//
//	error                                       class    why
//	context deadline (the attempt's Timeout)    timeout  kalab's per-attempt timeout
//	*quic.IdleTimeoutError                      timeout  nothing heard for the idle timeout with the
//	                                                     request in flight: the server or the path is
//	                                                     gone (a handshake to nobody ends here too,
//	                                                     after HandshakeIdleTimeout, 5 s by default)
//	*quic.HandshakeTimeoutError                 timeout  the handshake took over 2 x HandshakeIdleTimeout
//	*quic.TransportError, crypto code 0x1XX     tls      a TLS alert: certificate, ALPN, version
//	*quic.StatelessResetError                   reset    the server lost the connection's state
//	*quic.ApplicationError from the server      reset    the server closed the connection (as at shutdown)
//	*quic.StreamError from the server           reset    the server reset the request's stream
//	*quic.TransportError from the server        reset    the server aborted the connection
//	io.ErrUnexpectedEOF                         eof      the stream ended before the whole response
//	anything else                               client.Classify's answer, else other
//
// A request that fails on an idle connection the client had not yet noticed closing is
// not among them: the client checks the connection before each request and dials anew.
func Classify(err error) client.ErrorClass {
	if err == nil {
		return client.ClassNone
	}
	var (
		idle  *quic.IdleTimeoutError
		hs    *quic.HandshakeTimeoutError
		te    *quic.TransportError
		reset *quic.StatelessResetError
		app   *quic.ApplicationError
		str   *quic.StreamError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &idle), errors.As(err, &hs):
		return client.ClassTimeout
	case errors.As(err, &te) && te.ErrorCode.IsCryptoError():
		return client.ClassTLS
	case errors.As(err, &reset):
		return client.ClassReset
	case errors.As(err, &app) && app.Remote, errors.As(err, &str) && str.Remote, errors.As(err, &te) && te.Remote:
		return client.ClassReset
	case errors.Is(err, io.ErrUnexpectedEOF):
		return client.ClassEOF
	}
	return client.Classify(err)
}
