package proc

import (
	"bufio"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tcpListen is the state of a listening socket in /proc/net/tcp (TCP_LISTEN).
const tcpListen = "0A"

// ListenHolders returns the processes holding a listening TCP socket that a connection to
// 127.0.0.1:port can reach (bound to 127.0.0.1, 0.0.0.0, :: or ::ffff:127.0.0.1), and how
// many such sockets have no holder kalab can see. A socket shared by several processes
// (a server's workers) lists each of them.
func ListenHolders(port int) ([]Holder, int, error) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listenInodes(table, port, inodes); err != nil && !os.IsNotExist(err) {
			return nil, 0, err
		}
	}
	if len(inodes) == 0 {
		return nil, 0, nil
	}
	seen := map[string]bool{}
	var holders []Holder
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range pids {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		if holds(dir, inodes, seen) {
			holders = append(holders, describe(pid))
		}
	}
	hidden := 0
	for ino := range inodes {
		if !seen[ino] {
			hidden++
		}
	}
	return holders, hidden, nil
}

// listenInodes adds to inodes the inode of each listening socket of table on port that
// accepts connections to 127.0.0.1.
func listenInodes(table string, port int, inodes map[string]bool) error {
	f, err := os.Open(table)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 || fl[3] != tcpListen {
			continue
		}
		hexIP, hexPort, ok := strings.Cut(fl[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
			continue
		}
		if ip := parseHexIP(hexIP); ip != nil && (ip.IsUnspecified() || ip.Equal(net.IPv4(127, 0, 0, 1))) {
			inodes[fl[9]] = true
		}
	}
	return sc.Err()
}

// parseHexIP reads an address of /proc/net/tcp{,6}: 32-bit words in host (little-endian)
// order.
func parseHexIP(s string) net.IP {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil
	}
	ip := make(net.IP, len(b))
	for w := 0; w < len(b); w += 4 {
		ip[w], ip[w+1], ip[w+2], ip[w+3] = b[w+3], b[w+2], b[w+1], b[w]
	}
	return ip
}

// holds reports whether the process at dir has one of inodes open, marking those it has.
func holds(dir string, inodes, seen map[string]bool) bool {
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return false
	}
	found := false
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		ino := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		if inodes[ino] {
			seen[ino], found = true, true
		}
	}
	return found
}

// describe reads a process's name and group.
func describe(pid int) Holder {
	h := Holder{Pid: pid, Pgid: -1}
	dir := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(dir + "/comm"); err == nil {
		h.Comm = strings.TrimSpace(string(b))
	}
	if st, err := Stat(pid); err == nil {
		h.Pgid = st.Pgid
	}
	return h
}

// ProcStat is what /proc/<pid>/stat says of a process's place in the process tree.
type ProcStat struct {
	Comm                string
	State               byte
	Ppid, Pgid, Session int
}

// Stat reads /proc/<pid>/stat.
func Stat(pid int) (ProcStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return ProcStat{}, os.ErrInvalid
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return ProcStat{}, os.ErrInvalid
	}
	st := ProcStat{Comm: s[open+1 : end], State: f[0][0]}
	st.Ppid, _ = strconv.Atoi(f[1])
	st.Pgid, _ = strconv.Atoi(f[2])
	st.Session, _ = strconv.Atoi(f[3])
	return st, nil
}
