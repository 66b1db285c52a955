package kalabtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/kalab-dev/kalab/engine/client"
)

// DialFunc connects to the run's server: an http.Transport's DialContext.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// runClient builds one run's go-func client and counts the connections made through the
// dial kalab hands it.
type runClient struct {
	o     *options
	dials atomic.Int64
}

// newClient builds the run's client from the runner's resolved config. On the virtual clock
// cfg.Dial is the run's in-memory network: the caller's Transport dials only through it.
func (c *runClient) newClient(cfg client.Config) (client.Client, error) {
	tc := &tls.Config{RootCAs: cfg.RootCAs, ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12}
	if c.o.transport != nil {
		return client.NewFuncDial(cfg, func(dial client.DialFunc) (http.RoundTripper, error) {
			return c.o.transport(tc, c.counted(dial)), nil
		})
	}
	if c.o.hc.Timeout > 0 {
		cfg.Timeout = c.o.hc.Timeout
	}
	tr, err := c.o.clone(tc)
	if err != nil {
		return nil, err
	}
	if cfg.Dial == nil { // the real clock: the Transport's own dialer, over loopback
		return client.NewFunc(cfg, tr)
	}
	return client.NewFuncDial(cfg, func(dial client.DialFunc) (http.RoundTripper, error) {
		// Every connection goes through the run's network, TLS included: the
		// Transport's own TLS (its config, its ALPN) over that connection.
		//lint:ignore SA1019 a caller's deprecated Dial must be cleared, or it would dial outside the run
		tr.DialContext, tr.Dial = c.counted(dial), nil
		//lint:ignore SA1019 a caller's deprecated DialTLS would take over TLS dials when DialTLSContext is nil
		tr.DialTLSContext, tr.DialTLS = nil, nil
		return tr, nil
	})
}

// counted counts the dials through kalab's network.
func (c *runClient) counted(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.dials.Add(1)
		return dial(ctx, network, addr)
	}
}

// clone is the caller's Transport for one run: cloned, with no proxy, trusting the run's
// server, and speaking HTTP/2 exactly when the caller's Transport would have.
func (o *options) clone(tc *tls.Config) (*http.Transport, error) {
	var tr *http.Transport
	switch base := o.hc.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = base.Clone()
	default:
		return nil, fmt.Errorf("kalabtest.Client: the client's Transport is a %T; use kalabtest.Transport to build it around the dial and TLS config kalab hands you", base)
	}
	// Clone has run the caller's Transport's HTTP/2 set-up (net/http transport.go,
	// onceSetNextProtoDefaults): its TLS config offers "h2" by ALPN exactly when it speaks
	// HTTP/2, whether by Go's own choice (no TLSClientConfig, no dialer, or
	// ForceAttemptHTTP2: (*Transport).protocols) or by Protocols. The clone sets up HTTP/2
	// of its own, never the caller's, whose connection pool lives outside the run.
	h2 := tr.Protocols != nil && tr.Protocols.HTTP2()
	if tr.TLSClientConfig != nil && slices.Contains(tr.TLSClientConfig.NextProtos, "h2") {
		h2 = true
	}
	tr.TLSNextProto, tr.ForceAttemptHTTP2 = nil, h2
	tr.Proxy = nil // kalab's traffic stays on loopback (or in memory)
	if tr.TLSClientConfig != nil {
		mine := tr.TLSClientConfig.Clone()
		mine.RootCAs, mine.ServerName = tc.RootCAs, tc.ServerName
		if !h2 {
			mine.NextProtos = slices.DeleteFunc(slices.Clone(mine.NextProtos), func(p string) bool { return p == "h2" })
		}
		tr.TLSClientConfig = mine
	} else {
		tr.TLSClientConfig = tc
	}
	return tr, nil
}
