package runner

import (
	"context"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// keyShareSrc: 20 new TLS 1.3 connections, one request each, once with the default key
// share (X25519 alone) and once with Go's own (X25519MLKEM768, then X25519).
const keyShareSrc = `
name: key-share
clock: virtual
network: {rtt: 10ms}
server: {tls: true}
client: {keepalive: false}
load: {requests: 20}
variants:
  - name: x25519
  - name: go-default
    client: {tls_key_share: x25519mlkem768}
`

// TestKeyShareMovesBytesNotCounts: the key share changes a handshake's bytes, exactly as
// the two offers differ, and nothing else a run counts or times. Per connection, the
// ClientHello's key_share carries one more entry (RFC 8446 4.2.8: group 2 bytes, length 2,
// then X25519MLKEM768's share, an ML-KEM-768 encapsulation key of 1,184 bytes and an
// X25519 key of 32: 1,220) and supported_groups one more group (2): 1,222 bytes up. The
// ServerHello's share is the hybrid one instead of X25519's 32 bytes: an ML-KEM-768
// ciphertext of 1,088 bytes and the 32 bytes of X25519 (draft-ietf-tls-ecdhe-mlkem), so
// 1,088 bytes down. A share that was not applied leaves both differences at 0.
func TestKeyShareMovesBytesNotCounts(t *testing.T) {
	t.Parallel()
	out, err := Execute(context.Background(), plan(t, keyShareSrc), virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]*report.Run{}
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Fatalf("%s: %s (%s)", r.Variant, r.Status, r.Error)
		}
		runs[r.Variant] = r
	}
	x, g := runs["x25519"].Metrics.Flat(), runs["go-default"].Metrics.Flat()
	const conns = 20
	if x["connections"] != conns || x["tls_handshakes"] != conns {
		t.Fatalf("x25519: %v connections, %v handshakes; want %d of each", x["connections"], x["tls_handshakes"], conns)
	}
	if up := g["bytes_up"] - x["bytes_up"]; up != conns*1222 {
		t.Errorf("bytes_up %v with Go's default share, %v with X25519: %v more, want %d (1,222 a ClientHello)", g["bytes_up"], x["bytes_up"], up, conns*1222)
	}
	if down := g["bytes_down"] - x["bytes_down"]; down != conns*1088 {
		t.Errorf("bytes_down %v with Go's default share, %v with X25519: %v more, want %d (1,088 a ServerHello)", g["bytes_down"], x["bytes_down"], down, conns*1088)
	}
	machine := map[string]bool{"bytes_up": true, "bytes_down": true, "cpu_us_per_request": true, "peak_rss_mb": true}
	for m, v := range x {
		if !machine[m] && g[m] != v {
			t.Errorf("%s: %v with X25519, %v with Go's default share; a count or time the key share moved", m, v, g[m])
		}
	}
}
