package fault

import (
	"go/ast"
	"go/parser"
	"go/token"
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
	"TCPKeepaliveDropped": TCPKeepaliveDropped, "ClientIdleIgnored": ClientIdleIgnored, "QUICIdleMax": QUICIdleMax, "QUICIdlePings": QUICIdlePings, "ProbeIdleUnread": ProbeIdleUnread, "ReloadKeepsIdle": ReloadKeepsIdle, "DrainAccepts": DrainAccepts, "GoAwayResendDropped": GoAwayResendDropped, "DeregisterReuses": DeregisterReuses, "ChainCountsFirst": ChainCountsFirst}

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

// modelOnly is the code a fault of a `model` guard may sit in: code no run of a real
// program executes, so that the real runs the harness takes from the suite's records
// (kalab run --reuse-real) are what the faulted binary would have measured. Keys are a
// file, or a file and the function holding the fault.On call.
var modelOnly = map[string]string{
	"engine/client/*":                             "kalab's own HTTP client: a run of a real client program does not build it (a balancer's backend pool does: a guarded file may have no balancer)",
	"engine/h3/client.go":                         "kalab's HTTP/3 client; the real HTTP/3 runs are Chromium's, against kalab's server (server.go)",
	"engine/oracle/*":                             "the oracle's predictions, which compares read for the model runs, computed afresh in each invocation",
	"engine/configure/configure.go Client":        "the settings of kalab's own client (topology's goClient, the one caller)",
	"engine/configure/configure.go retryAttempts": "called only from Client",
	"engine/configure/http3.go H3Client":          "the settings of kalab's HTTP/3 client (topology's h3 client hop, the one caller)",
}

// A `model` guard of .ci/faults runs a truth file's model side with the fault against its
// real runs' records from the suite: sound only where the fault cannot change a real run.
// Each fault.On of such a fault lies in model-only code, and the file has no balancer.
func TestModelGuardsTouchOnlyModelCode(t *testing.T) {
	table, err := os.ReadFile("../../.ci/faults")
	if err != nil {
		t.Fatal(err)
	}
	model := map[string][]string{} // fault -> files
	for _, line := range strings.Split(string(table), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "model" {
			model[f[0]] = append(model[f[0]], f[2])
		}
	}
	if len(model) == 0 {
		t.Fatal("no model guard in .ci/faults: the test would check nothing")
	}
	for fault, files := range model {
		for _, file := range files {
			b, err := os.ReadFile(filepath.Join("../..", file))
			if err != nil {
				t.Fatal(err)
			}
			if regexp.MustCompile(`(?m)^\s*(- )?(\{.*)?\bbalancer:`).Match(b) {
				t.Errorf("%s: a model guard's file has a balancer, whose backend pool runs kalab's client on the real clock too", file)
			}
		}
		sites := onSites(t, fault)
		if len(sites) == 0 {
			t.Errorf("fault %s: no fault.On site found", fault)
		}
		for _, s := range sites {
			if !modelOnlySite(s) {
				t.Errorf("fault %s has a model guard but switches in %s, which a run of a real program may execute: make its guards run guards", fault, s)
			}
		}
	}
}

// onSites lists "file function" for each fault.On of the fault with value name.
func onSites(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", p)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && isOn(c, name) {
					out = append(out, filepath.ToSlash(rel)+" "+fn.Name.Name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// isOn reports whether c is fault.On(fault.X) with X the constant whose value is name.
func isOn(c *ast.CallExpr, name string) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "On" || len(c.Args) != 1 {
		return false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fault" {
		return false
	}
	arg, ok := c.Args[0].(*ast.SelectorExpr)
	return ok && consts[arg.Sel.Name] == name
}

// modelOnlySite reports whether a "file function" site is in modelOnly.
func modelOnlySite(site string) bool {
	file, _, _ := strings.Cut(site, " ")
	if _, ok := modelOnly[site]; ok {
		return true
	}
	if _, ok := modelOnly[file]; ok {
		return true
	}
	_, ok := modelOnly[filepath.ToSlash(filepath.Dir(file))+"/*"]
	return ok
}
