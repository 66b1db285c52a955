package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoClocksFlags are the flags of .ci/run's two-clocks step: the real clock's counts held
// against the virtual runs of the committed baseline, either way, timings left out.
var twoClocksFlags = []string{"diff", "--two-sided",
	"--tolerance", "latency_ms.*=off", "--tolerance", "total_ms=off", "--tolerance", "rps=off",
	"--tolerance", "server_idle_close_ms.*=off"}

// The two-clocks step fails on a real run that disagrees with the model either way: a real
// stack that stopped racing (fewer errors and connections than the virtual run) as well as
// one that races more. The committed real results pass it as they are.
func TestTwoClocksStepIsTwoSided(t *testing.T) {
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ReplaceAll(string(ci), "'", ""), strings.Join(twoClocksFlags[1:], " ")) {
		t.Fatalf(".ci/run's two-clocks step does not pass %q", strings.Join(twoClocksFlags[1:], " "))
	}
	t.Chdir("../..") // the scenario files' own baseline: blocks apply, as in CI
	dir := t.TempDir()
	diffReal := func(real string) int {
		var out, errb strings.Builder
		code := Main(append(twoClocksFlags[:len(twoClocksFlags):len(twoClocksFlags)], "results/baseline.jsonl", real), &out, &errb)
		t.Logf("%s%s", summaryLine(out.String()), errb.String())
		return code
	}
	if code := diffReal("results/clocks-real.jsonl"); code != exitOK {
		t.Fatalf("the committed real results: exit %d, want 0", code)
	}
	for _, c := range []struct {
		name string
		set  map[string]float64
	}{
		{"stopped racing", map[string]float64{"errors": 0, "failed_attempts": 0, "failed_bursts": 0, "connections": 1, "server_connections": 1, "proxy_connections": 1, "tls_handshakes": 1, "reused_requests": 999, "reuse_ratio": 0.999, "ok": 1000}},
		{"races more", map[string]float64{"errors": 40, "failed_attempts": 40, "failed_bursts": 40, "ok": 960}},
	} {
		t.Run(c.name, func(t *testing.T) {
			doctored := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".jsonl")
			doctor(t, "results/clocks-real.jsonl", doctored, "stale-race", "node-agent", c.set)
			if code := diffReal(doctored); code != exitCheckFailed {
				t.Errorf("a real stale-race/node-agent that %s: exit %d, want %d", c.name, code, exitCheckFailed)
			}
		})
	}
}

func summaryLine(out string) string {
	for l := range strings.Lines(out) {
		if strings.Contains(l, " compared, ") {
			return l
		}
	}
	return ""
}

// doctor copies src to dst with the metrics of one run record set to set.
func doctor(t *testing.T, src, dst, scenario, variant string, set map[string]float64) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var b strings.Builder
	found := false
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["record"] == "run" && rec["scenario"] == scenario && rec["variant"] == variant {
			m := rec["metrics"].(map[string]any)
			for k, v := range set {
				m[k] = v
			}
			out, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			line, found = string(out), true
		}
		b.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil || !found {
		t.Fatalf("%s: %s/%s found %v, %v", src, scenario, variant, found, err)
	}
	if err := os.WriteFile(dst, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
