// Package goclient is a service's HTTP client, as a service would write one, and the
// tests that check it against a server's idle timeout with kalab (client_test.go).
package goclient

import (
	"errors"
	"io"
	"net/http"
	"syscall"
	"time"
)

// New is the service's client: Go's Transport with its default idle timeout.
func New() *http.Client {
	return &http.Client{
		Transport: &http.Transport{IdleConnTimeout: 90 * time.Second},
		Timeout:   10 * time.Second,
	}
}

// RetryOnReset re-sends a request once when its connection was closed or reset under it
// before any response came back (io.EOF, ECONNRESET): what a service adds after seeing
// "EOF" on a POST that followed a pause. It re-sends every method, POST included, so the
// server must tolerate a request it may have seen once already.
type RetryOnReset struct {
	Next http.RoundTripper
}

func (r *RetryOnReset) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.Next.RoundTrip(req)
	if err == nil || !reset(err) || req.Context().Err() != nil {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, err // the body is spent and cannot be read again
		}
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = body
	}
	return r.Next.RoundTrip(req)
}

// reset reports whether err says the connection ended under the request.
func reset(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
