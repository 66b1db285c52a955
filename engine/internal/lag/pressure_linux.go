package lag

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// cpuStall reads the cumulative time some task waited for a CPU, in microseconds on the
// "some" line's total= field of /proc/pressure/cpu.
func cpuStall() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	return parseStall(b)
}

// parseStall finds "total=N" on the line that starts with "some".
func parseStall(b []byte) (time.Duration, bool) {
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(line, []byte("some ")) {
			continue
		}
		_, v, ok := bytes.Cut(line, []byte("total="))
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		return time.Duration(n) * time.Microsecond, true
	}
	return 0, false
}
