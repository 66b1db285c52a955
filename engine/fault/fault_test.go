package fault

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// consts maps each fault's Go name to its value, as the engine's code names it.
var consts = map[string]string{"HintIgnored": HintIgnored, "CloseUndelayed": CloseUndelayed,
	"HandshakeShort": HandshakeShort, "IdleCloseDouble": IdleCloseDouble, "HiddenUncounted": HiddenUncounted,
	"ProbeBlind": ProbeBlind, "IdleReaderHeld": IdleReaderHeld, "UndiciAsNode": UndiciAsNode, "OracleBatchesDropped": OracleBatchesDropped,
	"QUICClientIdleDropped": QUICClientIdleDropped, "UndiciNoReconnectInPlace": UndiciNoReconnectInPlace,
	"UndiciHintThreshold1s": UndiciHintThreshold1s, "ZeroRTTAnyMethod": ZeroRTTAnyMethod, "OracleQUICMax": OracleQUICMax,
	"PendingInputEverywhere": PendingInputEverywhere, "TLSResumptionDropped": TLSResumptionDropped, "TLSResumptionForced": TLSResumptionForced, "UndiciCloseFreesAtOnce": UndiciCloseFreesAtOnce, "HiddenResendDropped": HiddenResendDropped,
	"TCPKeepaliveDropped": TCPKeepaliveDropped, "ClientIdleIgnored": ClientIdleIgnored, "QUICIdleMax": QUICIdleMax, "QUICIdlePings": QUICIdlePings, "ProbeIdleUnread": ProbeIdleUnread, "ReloadKeepsIdle": ReloadKeepsIdle, "DrainAccepts": DrainAccepts}

// Every fault is in .ci/faults with a guard, and the engine's code switches on each: a
// fault no guard runs, or no code reads, would prove nothing.
func TestEveryFaultIsGuardedAndUsed(t *testing.T) {
	table, err := os.ReadFile("../../.ci/faults")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(table), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") && !slices.Contains(listed, f[0]) {
			listed = append(listed, f[0])
		}
	}
	slices.Sort(listed)
	names := slices.Clone(Names)
	slices.Sort(names)
	if !slices.Equal(listed, names) {
		t.Errorf(".ci/faults lists %v; the package names %v", listed, names)
	}
	used := map[string]bool{}
	on := regexp.MustCompile(`fault\.On\(fault\.(\w+)\)`)
	err = filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		for _, m := range on.FindAllSubmatch(b, -1) {
			used[consts[string(m[1])]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Names {
		if !used[n] {
			t.Errorf("fault %s: no fault.On in the engine switches on it", n)
		}
	}
}
