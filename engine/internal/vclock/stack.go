package vclock

import (
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// The runtime prints a bubble member's goroutine header as
// "goroutine 7 [chan receive (durable), synctest bubble 3]:" — the bubble id
// follows ", synctest bubble " and durably blocked states carry "(durable)".
var bubbleHeader = regexp.MustCompile(`^goroutine (\d+) \[(.*), synctest bubble (\d+)(?:\]| labels:)`)

// currentBubbleID returns the runtime's id of the calling goroutine's bubble.
func currentBubbleID() (int64, bool) {
	buf := make([]byte, 512)
	n := runtime.Stack(buf, false)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	m := bubbleHeader.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(m[3], 10, 64)
	return id, err == nil
}

// allStacks returns runtime.Stack(all=true) in full.
func allStacks() string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// bubbleGoroutines summarises the goroutines of bubble id in the current
// stacks; with notDurable set, only those not durably blocked.
func bubbleGoroutines(id int64, notDurable bool) []string {
	return filterStacks(allStacks(), id, notDurable)
}

func filterStacks(dump string, id int64, notDurable bool) []string {
	want := strconv.FormatInt(id, 10)
	var out []string
	for _, block := range strings.Split(dump, "\n\n") {
		block = strings.TrimSpace(block)
		header, body, _ := strings.Cut(block, "\n")
		m := bubbleHeader.FindStringSubmatch(header)
		if m == nil || m[3] != want {
			continue
		}
		status := m[2]
		if notDurable && strings.Contains(status, "(durable)") {
			continue
		}
		sum := summarize(m[1], status, body)
		if isHarness(sum) {
			continue
		}
		out = append(out, sum)
	}
	return out
}

// harnessFrames are the top frames of the goroutines that synctest.Test and
// Run keep in every bubble, waiting for the run's function: always present,
// never the cause of a block.
var harnessFrames = []string{
	"testing/synctest.testingSynctestTest",
	"github.com/kalab-dev/kalab/engine/internal/vclock.(*bubble).root",
}

// isHarness reports whether the summary is of a harness goroutine.
func isHarness(summary string) bool {
	for _, f := range harnessFrames {
		if strings.Contains(summary, "]: "+f+" ") || strings.HasSuffix(summary, "]: "+f) {
			return true
		}
	}
	return false
}

// maxFrames is how many frames outside package runtime a summary names.
const maxFrames = 8

// summarize renders one goroutine as
// "goroutine 7 [IO wait]: f1 < f2 < ... (file:line of the first frame outside the standard library)".
func summarize(goid, status, body string) string {
	var b strings.Builder
	b.WriteString("goroutine " + goid + " [" + status + "]:")
	lines := strings.Split(body, "\n")
	frames := 0
	where := ""
	for i := 0; i < len(lines); i++ {
		fn := strings.TrimSpace(lines[i])
		if fn == "" || strings.HasPrefix(fn, "\t") {
			continue
		}
		var file string
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			file = strings.TrimSpace(lines[i+1])
			i++
		}
		if strings.HasPrefix(fn, "created by ") {
			break
		}
		name := fn
		if p := strings.LastIndexByte(name, '('); p > 0 && strings.HasSuffix(name, ")") {
			name = name[:p] // drop the argument list
		}
		if strings.HasPrefix(name, "runtime.") {
			continue
		}
		if frames < maxFrames {
			if frames > 0 {
				b.WriteString(" <")
			}
			b.WriteString(" " + name)
			frames++
		}
		if where == "" && file != "" && !isStd(name) {
			where = file
		}
	}
	if where != "" {
		if sp := strings.LastIndex(where, " +0x"); sp > 0 {
			where = where[:sp]
		}
		b.WriteString(" (" + where + ")")
	}
	return b.String()
}

// isStd reports whether the function name belongs to a standard-library
// package: its import path's first element has no dot.
func isStd(fn string) bool {
	first, _, _ := strings.Cut(fn, "/")
	if !strings.Contains(fn, "/") {
		first, _, _ = strings.Cut(fn, ".")
		return first != "main"
	}
	return !strings.Contains(first, ".")
}
