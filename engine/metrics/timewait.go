package metrics

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// TimeWait counts the sockets in TIME_WAIT whose local or remote port is port, read from
// /proc/net/tcp and /proc/net/tcp6. A run's link between client and proxy has a port of its
// own, so the count is that run's, even with runs in parallel.
func TimeWait(port int) (int, error) {
	return TimeWaitOwn(port, nil)
}

// TimeWaitOwn counts the TIME_WAIT sockets of one run: those between port (the run's
// listener) and a peer port for which own returns true (the ports of the connections that
// listener accepted), whichever end closed first and so holds the TIME_WAIT. A socket left
// on the same port by an earlier run, or by a parallel run whose ephemeral port happens to
// equal it, is not counted. A nil own counts every socket with port at either end.
//
// Each socket counts once by its address pair: the kernel writes /proc/net/tcp a page at a
// time from a table that changes meanwhile, and on a machine closing many connections a
// socket can appear twice in one read (20 active closes once counted 36 TIME_WAIT sockets,
// and 5 other peers' 11, beside two busy cores and go test).
func TimeWaitOwn(port int, own func(peer int) bool) (int, error) {
	n := 0
	seen := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		c, err := countTimeWait(f, port, own, seen)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return 0, err
		}
		n += c
	}
	return n, nil
}

const tcpTimeWait = "06" // include/net/tcp_states.h: TCP_TIME_WAIT

func countTimeWait(path string, port int, own func(int) bool, seen map[string]bool) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	n := 0
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st ...: addresses are HEXIP:HEXPORT.
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != tcpTimeWait {
			continue
		}
		if pair := fields[1] + " " + fields[2]; seen[pair] {
			continue
		} else {
			seen[pair] = true
		}
		local, remote := hexPort(fields[1]), hexPort(fields[2])
		switch {
		case local == port && (own == nil || own(remote)):
			n++
		case remote == port && (own == nil || own(local)):
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}
