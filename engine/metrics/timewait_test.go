package metrics

import (
	"net"
	"testing"
	"time"
)

// A connection closed first by this side leaves a TIME_WAIT socket on its port; closing
// 20 of them must show up as 20.
func TestTimeWaitCountsActiveCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { buf := make([]byte, 1); c.Read(buf); c.Close() }()
		}
	}()
	before, err := TimeWait(port)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close() // active close: this client socket goes to TIME_WAIT
	}
	deadline := time.Now().Add(3 * time.Second)
	got := 0
	for time.Now().Before(deadline) {
		if got, _ = TimeWait(port); got-before >= 20 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got-before != 20 {
		t.Fatalf("TIME_WAIT on port %d: %d new; want 20", port, got-before)
	}
}

func TestHexPort(t *testing.T) {
	for in, want := range map[string]int{"0100007F:1F90": 8080, "00000000000000000000000001000000:0050": 80, "bad": -1, "X:ZZ": -1} {
		if got := hexPort(in); got != want {
			t.Errorf("hexPort(%q) = %d; want %d", in, got, want)
		}
	}
}

// Sockets on the same port that belong to someone else (here: closed connections whose
// client ports the run does not own) are not the run's TIME_WAIT.
func TestTimeWaitOwnCountsOnlyTheRunsPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { buf := make([]byte, 1); c.Read(buf); c.Close() }()
		}
	}()
	mine := map[int]bool{}
	for i := range 15 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if i < 10 {
			mine[c.LocalAddr().(*net.TCPAddr).Port] = true
		}
		c.Close()
	}
	own := func(p int) bool { return mine[p] }
	deadline := time.Now().Add(3 * time.Second)
	got, all := 0, 0
	for time.Now().Before(deadline) {
		got, _ = TimeWaitOwn(port, own)
		all, _ = TimeWait(port)
		if all >= 15 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got != 10 || all < 15 {
		t.Fatalf("own TIME_WAIT %d (want 10), all on the port %d (want >= 15)", got, all)
	}
}
