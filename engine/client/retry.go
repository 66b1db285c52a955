package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// attemptResult is what the retry decision needs to know about one failed attempt.
type attemptResult struct {
	class     ErrorClass
	reused    bool // the attempt went out on a connection that had served a request
	gotByte   bool // at least one response byte arrived
	cancelled bool // the caller's context ended: never retried
}

// Attempt is a failed attempt as the retry rule reads it, for a client outside this
// package (the HTTP/3 client) that applies the same RetryPolicy.
type Attempt struct {
	Class                      ErrorClass
	Reused, GotByte, Cancelled bool
}

// Retries reports whether the policy re-sends after attempt a, the done-th; idempotent is
// Idempotent's answer for the request.
func (p RetryPolicy) Retries(idempotent bool, done int, a Attempt) bool {
	return shouldRetry(p, idempotent, done, attemptResult{class: a.Class, reused: a.Reused, gotByte: a.GotByte, cancelled: a.Cancelled})
}

// shouldRetry applies a RetryPolicy to a failed attempt. done is the number of attempts made.
func shouldRetry(p RetryPolicy, idempotent bool, done int, r attemptResult) bool {
	if r.class == ClassNone || r.cancelled || done > p.Attempts {
		return false
	}
	found := false
	for _, c := range p.On {
		if c == r.class {
			found = true
			break
		}
	}
	switch {
	case !found:
		return false
	case p.IdempotentOnly && !idempotent:
		return false
	case p.ReusedOnly && !r.reused:
		return false
	case p.ZeroBytesOnly && (!r.reused || r.gotByte):
		return false
	}
	return true
}

// Classify maps an error from dialing, TLS, writing or reading to an ErrorClass.
// Order matters: a reset during a handshake is a reset, not a TLS failure.
func Classify(err error) ErrorClass {
	if err == nil {
		return ClassNone
	}
	var (
		alert    tls.AlertError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		record   tls.RecordHeaderError
		netErr   net.Error
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return ClassReset
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return ClassTimeout
	case errors.As(err, &alert), errors.As(err, &verify), errors.As(err, &unknown),
		errors.As(err, &invalid), errors.As(err, &hostname), errors.As(err, &record):
		return ClassTLS
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ClassEOF
	case strings.Contains(err.Error(), "server closed idle connection"):
		// net/http's errServerClosedIdle: the server's FIN arrived before any response byte.
		return ClassEOF
	}
	return ClassOther
}
