package chromeh3

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/kalab-dev/kalab/engine/client"
)

// Event is one of Chromium's requests (Seq from 1) as kalab's clients report theirs, its
// step numbered from 0. Chromium's connection ids start at 0, and kalab's 0 means none, so
// a connection is its id + 1. Reused is left to the caller, which counts it as kalab does.
func (r Result) Event() client.Event {
	ev := client.Event{Seq: r.Seq - 1, Start: r.Start, Latency: r.Latency, Status: r.Status, Attempts: 1, Error: r.Err}
	if r.Status > 0 {
		ev.ConnID = uint64(r.ConnectionID) + 1
	}
	if r.Err != "" && r.Status == 0 {
		ev.Class = errorClass(r.Err)
	}
	return ev
}

// errorClass reads Chromium's net error names (net/base/net_error_list.h).
func errorClass(err string) client.ErrorClass {
	switch {
	case strings.Contains(err, "TIMED_OUT"):
		return client.ClassTimeout
	case strings.Contains(err, "CONNECTION_RESET"), strings.Contains(err, "QUIC_PROTOCOL_ERROR"):
		return client.ClassReset
	case strings.Contains(err, "CONNECTION_REFUSED"):
		return client.ClassRefused
	case strings.Contains(err, "CERT"), strings.Contains(err, "SSL"):
		return client.ClassTLS
	}
	return client.ClassOther
}

// SPKI is Options.CertSPKI for a server's certificate: the base64 SHA-256 of its public key,
// the one exception to certificate checks QUIC in Chromium takes.
func SPKI(cert tls.Certificate) (string, error) {
	if len(cert.Certificate) == 0 {
		return "", errors.New("chromeh3: the certificate is empty")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}
