package server

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// certName is the DNS name the in-memory certificate is issued for; it also covers
// 127.0.0.1 and ::1 as IP SANs so clients may dial the address directly.
const certName = "localhost"

// newCertificate makes a self-signed certificate in memory (nothing touches disk) and the
// pool that trusts it, so clients verify it instead of skipping checks: ECDSA P-256, or
// Ed25519 when ed25519 is set. An Ed25519 signature is always 64 bytes, where an ECDSA
// one's DER encoding is 70 to 72 depending on its random nonce: with Ed25519 every
// handshake of a run on the virtual clock carries the same bytes, so its byte counts
// repeat exactly. The serial number always takes 8 bytes for the same reason.
func newCertificate(ed25519Key bool) (tls.Certificate, *x509.CertPool, error) {
	var key crypto.Signer
	var err error
	if ed25519Key {
		_, key, err = ed25519.GenerateKey(rand.Reader)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generating the certificate's key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generating certificate serial: %w", err)
	}
	serial.SetBit(serial, 62, 1) // 63 significant bits: 8 bytes of DER, whatever was drawn
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kalab embedded server", Organization: []string{"kalab"}},
		NotBefore:             now.Add(-time.Hour),  // tolerate small clock differences
		NotAfter:              now.AddDate(1, 0, 0), // a virtual run can span days of model time
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: it is its own root in RootCAs
		DNSNames:              []string{certName},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("self-signing certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("parsing the new certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

// virtualCert is the Ed25519 certificate of the runs on the virtual clock, made once per
// process: making one (a key, a signature, its check and a parse) was a twentieth of the CPU
// of a run of a few requests, and every run on the virtual clock would make one just like
// it. Every testing/synctest bubble starts its clock at the same instant (midnight UTC,
// 2000-01-01), so a certificate made at the start of one run is valid for the same span of
// model time in the next; one is reused only when it was made within an hour of the
// caller's now, so its validity is a fresh one's. Its bytes have a fresh one's sizes
// (Ed25519, 8-byte serial), so no count or byte count changes; the certificate and the pool
// are only read once made, so runs in parallel share them.
var virtualCert struct {
	sync.Mutex
	cert tls.Certificate
	pool *x509.CertPool
}

// ed25519Certificate is newCertificate(true), reusing virtualCert when it is fresh for now.
func ed25519Certificate() (tls.Certificate, *x509.CertPool, error) {
	virtualCert.Lock()
	defer virtualCert.Unlock()
	now := time.Now()
	if c := virtualCert.cert.Leaf; c != nil && !now.Before(c.NotBefore) && now.Before(c.NotBefore.Add(2*time.Hour)) {
		return virtualCert.cert, virtualCert.pool, nil
	}
	cert, pool, err := newCertificate(true)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	virtualCert.cert, virtualCert.pool = cert, pool
	return cert, pool, nil
}

// CertName is the DNS name the certificates of NewCertificate are issued for.
const CertName = certName

// NewCertificate makes a certificate like the embedded server's (self-signed ECDSA P-256
// for localhost, 127.0.0.1 and ::1, in memory) and the pool that trusts it, for a real
// server started for a run to serve with.
func NewCertificate() (tls.Certificate, *x509.CertPool, error) { return newCertificate(false) }

// NewEd25519Certificate is NewCertificate with an Ed25519 key (Config.Ed25519Cert): a
// handshake of one size, for a run on the virtual clock whose byte counts repeat. It is
// made once per process and shared while fresh (virtualCert).
func NewEd25519Certificate() (tls.Certificate, *x509.CertPool, error) { return ed25519Certificate() }
