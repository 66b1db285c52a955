package browsertest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestHeadlessStartsACrashedBrowserAgain: a browser killed by a signal judged nothing, so
// Headless starts it again; what the second start printed is returned. The stand-in is a
// shell script that kills itself with SIGSEGV on its first start, as Chromium did under
// load: Chromium is not what this test is about.
func TestHeadlessStartsACrashedBrowserAgain(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands in for the browser") // skip: CI runs Linux
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "browser")
	script := "#!/bin/sh\nif [ ! -e " + dir + "/started ]; then touch " + dir + "/started; kill -SEGV $$; fi\necho '<html>drawn</html>'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := string(Headless(t, bin, "--dump-dom", "file:///dev/null")); !strings.Contains(out, "drawn") {
		t.Fatalf("after a crash Headless returned %q, want the second start's output", out)
	}
}
