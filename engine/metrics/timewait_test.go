package metrics

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/testkit/testci"
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
	ours := map[int]bool{}
	for _, c := range dialAll(t, ln.Addr().String(), 20) {
		ours[c.LocalAddr().(*net.TCPAddr).Port] = true
		c.Close() // active close: this client socket goes to TIME_WAIT
	}
	// Counted by the client ports: a count before and after would also see an earlier
	// listener's TIME_WAIT on the same port number expire, or be taken over by one of these.
	got := awaitTimeWait(t, port, func(p int) bool { return ours[p] }, 20)
	want := 20
	if got != want {
		// A socket the kernel no longer lists in any state is not the count's to find: at
		// load 4 (go test ./... beside two busy cores) 2 of the 20 once left no count after
		// 30 s. Every one of ours the kernel still lists must be in TIME_WAIT by now and
		// counted; the test cannot judge when most are gone.
		states := peerStates(port)
		listed, notTW := 0, []string{}
		for p := range ours {
			st, ok := states[p]
			if !ok {
				continue
			}
			listed++
			if st != tcpTimeWait {
				notTW = append(notTW, fmt.Sprintf("%d in state %s", p, st))
			}
		}
		if len(notTW) > 0 {
			t.Fatalf("after 30 s, sockets of ours are not in TIME_WAIT: %s; the kernel's lines for port %d:\n%s", strings.Join(notTW, ", "), port, socketLines(port))
		}
		needListed(t, port, listing{"our", listed, 20, 16})
		t.Logf("the kernel lists %d of our 20 sockets (the rest left no line in any state)", listed)
		want = listed
	}
	if got != want {
		t.Fatalf("TIME_WAIT on port %d: %d of our 20 active closes; want the %d the kernel lists", port, got, want)
	}
	if all, err := TimeWait(port); err != nil || all < want {
		t.Fatalf("TimeWait(%d) = %d, %v; want at least %d", port, all, err, want)
	}
}

// awaitTimeWait polls TimeWaitOwn until it reaches want, for up to 30 s (the sockets reach
// TIME_WAIT when the server's goroutines have run, later on a loaded machine), and returns
// the last count.
func awaitTimeWait(t *testing.T, port int, own func(int) bool, want int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := TimeWaitOwn(port, own)
		if err != nil {
			t.Fatal(err)
		}
		if got >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dialAll opens n connections to addr and returns them open. Held open together, they
// have n different client ports: a connection dialled after another's close could take
// the port of its TIME_WAIT socket instead (Linux reuses a loopback TIME_WAIT older than
// 1 s for a new connection to the same address, net.ipv4.tcp_tw_reuse=2), so n closes
// would leave fewer than n TIME_WAIT sockets whenever the dialling took over a second.
func dialAll(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns
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
	mine, theirs := map[int]bool{}, map[int]bool{}
	for i, c := range dialAll(t, ln.Addr().String(), 15) {
		p := c.LocalAddr().(*net.TCPAddr).Port
		if i < 10 {
			mine[p] = true
		} else {
			theirs[p] = true
		}
		c.Close()
	}
	own := func(p int) bool { return mine[p] }
	other := func(p int) bool { return theirs[p] }
	// Counted by their own ports: a count of every socket on the port can include an
	// earlier listener's, left on the same port number.
	others := awaitTimeWait(t, port, other, 5)
	got := awaitTimeWait(t, port, own, 10)
	all, _ := TimeWait(port)
	// A socket the kernel no longer lists in any state is not the count's to find: at load 4
	// (go test ./... beside two busy cores) one of the 15 once left no line at either end
	// after 30 s, 14 TIME_WAIT lines and the listener's. The count is judged against the
	// sockets the kernel still lists.
	listed := peers(port)
	wantOwn, wantOthers := countIn(mine, listed), countIn(theirs, listed)
	needListed(t, port, listing{"our", wantOwn, 10, 8}, listing{"the other", wantOthers, 5, 3})
	if wantOwn+wantOthers < 15 {
		t.Logf("the kernel lists %d of our 10 and %d of the other 5 sockets (the rest left no line in any state)", wantOwn, wantOthers)
	}
	if got != wantOwn || others != wantOthers || all < wantOwn+wantOthers {
		t.Fatalf("own TIME_WAIT %d (want %d), the other peers' %d (want %d), all on the port %d (want >= %d); the kernel's lines for the port:\n%s",
			got, wantOwn, others, wantOthers, all, wantOwn+wantOthers, socketLines(port))
	}
}

// listing is how many of a group of a test's sockets the kernel still lists (in any state),
// of how many, and the least that lets the test judge a count of them.
type listing struct {
	whose             string
	listed, of, least int
}

// needListed gives no verdict when the kernel no longer lists enough of a test's sockets: a
// socket it lists in no state is not the count's to find, and with most of them gone the
// count says nothing.
func needListed(t *testing.T, port int, groups ...listing) {
	t.Helper()
	short := false
	var said []string
	for _, g := range groups {
		short = short || g.listed < g.least
		said = append(said, fmt.Sprintf("%d of %s %d", g.listed, g.whose, g.of))
	}
	if short {
		testci.SkipOrFail(t, "only %s sockets are still listed by the kernel; its lines for port %d:\n%s", strings.Join(said, " and "), port, socketLines(port))
	}
}

// peers returns the peer ports of every socket the kernel lists with port at the other end,
// in any state.
func peers(port int) map[int]bool {
	out := map[int]bool{}
	for p := range peerStates(port) {
		out[p] = true
	}
	return out
}

// peerStates returns, for every socket the kernel lists with port at the other end, its
// peer port and its state (as /proc/net/tcp writes it: 06 is TIME_WAIT).
func peerStates(port int) map[int]string {
	out := map[int]string{}
	for _, line := range strings.Split(socketLines(port), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		local, remote := hexPort(f[1]), hexPort(f[2])
		switch {
		case local == port && remote > 0:
			out[remote] = f[3]
		case remote == port:
			out[local] = f[3]
		}
	}
	return out
}

func countIn(ports, listed map[int]bool) int {
	n := 0
	for p := range ports {
		if listed[p] {
			n++
		}
	}
	return n
}

// socketLines returns the lines of /proc/net/tcp and tcp6 that name port (local or remote),
// with their states, for a failure's message: which sockets were not in TIME_WAIT.
func socketLines(port int) string {
	hex := fmt.Sprintf(":%04X ", port)
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line+" ", hex) {
				out = append(out, strings.Join(strings.Fields(line)[:4], " "))
			}
		}
	}
	return strings.Join(out, "\n")
}

// A socket the kernel lists twice in one read of /proc/net/tcp (its table changed between
// two pages) counts once: the count is of address pairs, not of lines.
func TestTimeWaitCountsEachSocketOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tcp")
	lines := "  sl  local_address rem_address   st\n" +
		"   0: 0100007F:99B7 00000000:0000 0A\n" +
		"   1: 0100007F:A06C 0100007F:99B7 06\n" +
		"   2: 0100007F:A07A 0100007F:99B7 06\n" +
		"   3: 0100007F:A06C 0100007F:99B7 06\n" + // the first again
		"   4: 0100007F:99B7 0100007F:A090 06\n" + // the server's end of another
		"   5: 0100007F:A0AA 0100007F:1F90 06\n" // another port
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := countTimeWait(path, 0x99B7, nil, map[string]bool{})
	if err != nil || n != 3 {
		t.Fatalf("countTimeWait = %d, %v; want 3 (A06C once, A07A, A090)", n, err)
	}
	own := func(p int) bool { return p == 0xA06C }
	if n, _ := countTimeWait(path, 0x99B7, own, map[string]bool{}); n != 1 {
		t.Fatalf("own count %d; want 1", n)
	}
}
