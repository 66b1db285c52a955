package client

import (
	"context"
	"time"
)

// ErrorClass names why a request failed. The empty class means it succeeded.
type ErrorClass string

// The error classes kalab reports.
const (
	ClassNone    ErrorClass = ""
	ClassReset   ErrorClass = "reset"   // ECONNRESET, EPIPE: Node's "read ECONNRESET"
	ClassEOF     ErrorClass = "eof"     // EOF before a complete response: "socket hang up", "other side closed"
	ClassTimeout ErrorClass = "timeout" // the response did not complete within the client timeout
	ClassRefused ErrorClass = "refused" // ECONNREFUSED
	ClassTLS     ErrorClass = "tls"     // handshake or certificate failure
	ClassOther   ErrorClass = "other"
)

// Classes lists every failure class in a stable order, for metrics and reports.
var Classes = []ErrorClass{ClassReset, ClassEOF, ClassTimeout, ClassRefused, ClassTLS, ClassOther}

// Event is what one logical request did, retries included. It is the contract between
// the client and the metrics and report packages.
type Event struct {
	Seq           int           // 0-based position in the run's schedule
	Start         time.Time     // when the client began the request (monotonic clock)
	Latency       time.Duration // from Start to the last response byte, or to the failure
	ConnID        uint64        // client-side id of the connection that carried the final attempt; 0 if none
	ServerConn    uint64        // the server's id of that connection, from its Kalab-Conn response header; 0 if none
	Reused        bool          // the final attempt went out on a connection that had served a request before
	Attempts      int           // attempts the client made, >= 1 (visible retries = Attempts-1)
	HiddenRetries int           // re-sends a real client did on its own (Go's Transport), detected by tracing
	Status        int           // HTTP status, 0 when no response
	BytesRead     int64         // response body bytes actually read
	Class         ErrorClass    // ClassNone on success
	Error         string        // the original error text, empty on success
	Code          string        // the error code a real client's runtime gave (ECONNRESET, UND_ERR_SOCKET, 52), empty otherwise
	Connect       time.Duration // TCP connect time of a new connection in the final attempt, 0 when reused
	TLS           time.Duration // TLS handshake time of a new connection, 0 when reused or plain
	FirstByte     time.Duration // from Start to the first response byte, 0 when none

	// Set when the response crossed a kalab balancer (its Kalab-Backend-* headers): the
	// balancer's id of the backend connection that carried the request, the attempts it
	// made there (re-sends the client never saw are BackendAttempts-1), and whether it
	// reused that connection. Zero without a balancer.
	BackendConn     uint64
	BackendAttempts int
	BackendReused   bool
}

// OK reports whether the request succeeded.
func (e Event) OK() bool { return e.Class == ClassNone }

// Stats are a client's cumulative counters for a run.
type Stats struct {
	Connections   int64 // connections the client opened (TCP connects that succeeded)
	TLSHandshakes int64 // full or resumed TLS handshakes completed
	TLSResumed    int64 // handshakes that resumed a session
	Retries       int64 // visible retries (attempts beyond the first), summed over requests
	HiddenRetries int64 // re-sends done inside a real client library, detected by tracing
	H2Streams     int64 // HTTP/2 streams opened
	// AttemptErrors counts failed attempts by class, retried ones included (model client
	// only; nil for net/http, whose own re-sends are HiddenRetries).
	AttemptErrors map[ErrorClass]int64
}

// Client sends requests. Do is safe for concurrent use; it never returns an error:
// failures are data in the Event.
type Client interface {
	Do(ctx context.Context, seq int) Event
	Stats() Stats
	Close() error
}
