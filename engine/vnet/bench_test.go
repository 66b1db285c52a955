package vnet

import (
	"testing"
)

// BenchmarkRoundTrip measures a 100-byte request and response on one connection,
// outside a bubble.
func BenchmarkRoundTrip(b *testing.B) {
	n := New()
	defer n.Close()
	l, _ := n.Listen("")
	cl, err := n.Dial(b.Context(), l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c, _ := l.Accept()
	sv := c.(*Conn)
	go func() {
		buf := make([]byte, 100)
		for {
			if _, err := sv.Read(buf); err != nil {
				return
			}
			if _, err := sv.Write(buf); err != nil {
				return
			}
		}
	}()
	req, resp := make([]byte, 100), make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		cl.Write(req)
		for got := 0; got < len(resp); {
			k, err := cl.Read(resp[got:])
			if err != nil {
				b.Fatal(err)
			}
			got += k
		}
	}
}

// BenchmarkDialClose measures setting up and tearing down a connection.
func BenchmarkDialClose(b *testing.B) {
	n := New()
	defer n.Close()
	l, _ := n.Listen("")
	addr := l.Addr().String()
	b.ReportAllocs()
	for b.Loop() {
		cl, err := n.Dial(b.Context(), addr)
		if err != nil {
			b.Fatal(err)
		}
		sv, _ := l.Accept()
		cl.Close()
		sv.Close()
	}
}
