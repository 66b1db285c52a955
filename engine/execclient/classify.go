package execclient

import (
	"strings"

	"github.com/kalab-dev/kalab/engine/client"
)

// rule maps an error code or text of a runtime to kalab's class. Codes match exactly;
// texts match as case-insensitive substrings. The first rule that matches wins, so the
// more specific texts come first. The README's table is this list.
type rule struct {
	code, text string
	class      client.ErrorClass
	runtime    string // who says it, for the README
}

var rules = []rule{
	// The server closed the connection before a response: a FIN, read as end of stream.
	{text: "socket hang up", class: client.ClassEOF, runtime: "Node http (code ECONNRESET)"},
	{text: "other side closed", class: client.ClassEOF, runtime: "undici / fetch (code UND_ERR_SOCKET)"},
	{code: "RemoteDisconnected", class: client.ClassEOF, runtime: "Python http.client via requests"},
	{code: "IncompleteRead", class: client.ClassEOF, runtime: "Python http.client"},
	{code: "52", class: client.ClassEOF, runtime: "curl: Empty reply from server"},
	{code: "EOF", class: client.ClassEOF, runtime: "Go net/http (go-http: io.EOF, io.ErrUnexpectedEOF)"},
	{code: "18", class: client.ClassEOF, runtime: "curl: Transferred a partial file"},
	// A reset: the request reached a socket the server had already closed.
	{code: "ECONNRESET", class: client.ClassReset, runtime: "Node, undici (read ECONNRESET)"},
	{code: "EPIPE", class: client.ClassReset, runtime: "Node, undici (write EPIPE)"},
	{code: "ConnectionResetError", class: client.ClassReset, runtime: "Python"},
	{code: "BrokenPipeError", class: client.ClassReset, runtime: "Python"},
	{code: "56", class: client.ClassReset, runtime: "curl: Failure when receiving data from the peer"},
	{code: "55", class: client.ClassReset, runtime: "curl: Failed sending data to the peer"},
	{code: "UND_ERR_SOCKET", class: client.ClassReset, runtime: "undici, other socket errors"},
	{text: "connection reset", class: client.ClassReset, runtime: "any (Connection reset by peer)"},
	// Time limits.
	{code: "ETIMEDOUT", class: client.ClassTimeout, runtime: "Node"},
	{code: "TimeoutError", class: client.ClassTimeout, runtime: "fetch with AbortSignal.timeout; Python socket.timeout"},
	{code: "UND_ERR_HEADERS_TIMEOUT", class: client.ClassTimeout, runtime: "undici"},
	{code: "UND_ERR_BODY_TIMEOUT", class: client.ClassTimeout, runtime: "undici"},
	{code: "UND_ERR_CONNECT_TIMEOUT", class: client.ClassTimeout, runtime: "undici"},
	{code: "ReadTimeoutError", class: client.ClassTimeout, runtime: "urllib3"},
	{code: "ConnectTimeoutError", class: client.ClassTimeout, runtime: "urllib3"},
	{code: "28", class: client.ClassTimeout, runtime: "curl: Operation timed out"},
	// Refused.
	{code: "ECONNREFUSED", class: client.ClassRefused, runtime: "Node, undici"},
	{code: "ConnectionRefusedError", class: client.ClassRefused, runtime: "Python"},
	{code: "7", class: client.ClassRefused, runtime: "curl: Failed to connect"},
	// TLS.
	{code: "SSLError", class: client.ClassTLS, runtime: "Python ssl"},
	{code: "SSLCertVerificationError", class: client.ClassTLS, runtime: "Python ssl"},
	{code: "TLS", class: client.ClassTLS, runtime: "Go crypto/tls (go-http: certificate verification, alerts, a record that is not TLS)"},
	{code: "35", class: client.ClassTLS, runtime: "curl: SSL connect error"},
	{code: "60", class: client.ClassTLS, runtime: "curl: peer certificate cannot be authenticated"},
	{text: "certificate", class: client.ClassTLS, runtime: "Node (UNABLE_TO_VERIFY_LEAF_SIGNATURE, DEPTH_ZERO_SELF_SIGNED_CERT, ...)"},
	{code: "ERR_SSL_", class: client.ClassTLS, runtime: "Node (prefix)"},
}

// Classify maps a runtime's error code and text to kalab's error class; anything no
// rule knows is ClassOther (the raw code and text are kept in the request record).
func Classify(code, text string) client.ErrorClass {
	lower := strings.ToLower(text)
	for _, r := range rules {
		switch {
		case r.text != "" && strings.Contains(lower, r.text):
			return r.class
		case r.code != "" && strings.HasSuffix(r.code, "_") && strings.HasPrefix(code, r.code):
			return r.class
		case r.code != "" && code == r.code:
			return r.class
		}
	}
	return client.ClassOther
}

// Rule is one row of the classification table, for the README and kalab help.
type Rule struct {
	Match   string // code=X or text~Y
	Class   string
	Runtime string
}

// Rules returns the classification table in the order it is applied.
func Rules() []Rule {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		m := "code " + r.code
		if r.text != "" {
			m = "text contains \"" + r.text + "\""
		}
		out[i] = Rule{Match: m, Class: string(r.class), Runtime: r.runtime}
	}
	return out
}
