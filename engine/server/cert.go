package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certName is the DNS name the in-memory certificate is issued for; it also covers
// 127.0.0.1 and ::1 as IP SANs so clients may dial the address directly.
const certName = "localhost"

// newCertificate makes a self-signed ECDSA P-256 certificate in memory (nothing touches
// disk) and the pool that trusts it, so clients verify it instead of skipping checks.
func newCertificate() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generating P-256 key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generating certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kalab embedded server", Organization: []string{"kalab"}},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock differences
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: it is its own root in RootCAs
		DNSNames:              []string{certName},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
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

// CertName is the DNS name the certificates of NewCertificate are issued for.
const CertName = certName

// NewCertificate makes a certificate like the embedded server's (self-signed ECDSA P-256
// for localhost, 127.0.0.1 and ::1, in memory) and the pool that trusts it, for a real
// server started for a run to serve with.
func NewCertificate() (tls.Certificate, *x509.CertPool, error) { return newCertificate() }
