package server

import (
	"crypto/ed25519"
	"testing"
	"testing/synctest"
	"time"
)

// TestVirtualCertificateShared: the virtual clock's Ed25519 certificate is made once and
// handed to every run that starts within an hour of when it was made, so every bubble (all
// of them start at the same instant) shares it; one asked for hours later in model time, or
// on the real clock, is a fresh one valid from an hour before its caller's now.
func TestVirtualCertificateShared(t *testing.T) {
	var first []byte
	synctest.Test(t, func(t *testing.T) {
		a, poolA, err := NewEd25519Certificate()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := a.PrivateKey.(ed25519.PrivateKey); !ok {
			t.Fatalf("key %T, want ed25519", a.PrivateKey)
		}
		first = a.Certificate[0]
		time.Sleep(30 * time.Minute)
		b, poolB, err := NewEd25519Certificate()
		if err != nil {
			t.Fatal(err)
		}
		if string(b.Certificate[0]) != string(first) || poolB != poolA {
			t.Error("a second run in the same hour of model time got a certificate of its own")
		}
		time.Sleep(3 * time.Hour)
		c, _, err := NewEd25519Certificate()
		if err != nil {
			t.Fatal(err)
		}
		if string(c.Certificate[0]) == string(first) {
			t.Error("a run 3.5 h of model time later got the certificate made at the start")
		}
		if nb := c.Leaf.NotBefore; nb.After(time.Now()) || time.Since(nb) > 2*time.Hour {
			t.Errorf("the new certificate is valid from %v, the caller's now is %v", nb, time.Now())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A new bubble starts at the first one's instant: it gets the first one's back only if
		// the cache was not replaced since, so just check it is valid now.
		d, _, err := NewEd25519Certificate()
		if err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); now.Before(d.Leaf.NotBefore) || now.After(d.Leaf.NotAfter) {
			t.Errorf("certificate valid %v..%v, not at %v", d.Leaf.NotBefore, d.Leaf.NotAfter, now)
		}
	})
	onReal, _, err := NewEd25519Certificate()
	if err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); now.Before(onReal.Leaf.NotBefore) || now.After(onReal.Leaf.NotAfter) {
		t.Errorf("on the real clock: certificate valid %v..%v, not at %v", onReal.Leaf.NotBefore, onReal.Leaf.NotAfter, now)
	}
}
