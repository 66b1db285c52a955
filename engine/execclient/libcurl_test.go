package execclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// The libcurl adapter loads the release client.version names, or makes the run not run:
// without a version it reports the system's libcurl; asked for that release it finds it
// again; asked for one that is nowhere here its probe fails with ErrMissing, naming the
// release and what it found, so the run is not run rather than run on another libcurl.
// Given the system's library under KALAB_LIBCURL it loads that file (a private copy is
// named the same way).
func TestLibcurlVersionChoosesTheLibrary(t *testing.T) {
	testci.Program(t, "python3")
	a, _ := Lookup("libcurl")
	identify := func(version string) (Identity, error) {
		cfg := Config{Adapter: a, Plan: Plan{Client: map[string]any{}}, Version: version}
		return Identify(context.Background(), cfg)
	}
	sys, err := identify("")
	if errors.Is(err, ErrMissing) {
		testci.Missing(t, "libcurl", fmt.Sprintf("Debian package libcurl4; the adapter said: %v", err))
	}
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(sys.Version)
	if len(f) < 3 || !strings.HasPrefix(f[2], "libcurl/") {
		t.Fatalf("version line %q: want python VERSION libcurl/VERSION ...", sys.Version)
	}
	release := strings.TrimPrefix(f[2], "libcurl/")
	if id, err := identify(release); err != nil || !strings.Contains(id.Version, "libcurl/"+release+" ") {
		t.Errorf("asked for %s (the system's): %q, %v", release, id.Version, err)
	}
	_, err = identify("0.0.1")
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "no libcurl 0.0.1 here") || !strings.Contains(err.Error(), "libcurl/"+release) {
		t.Errorf("asked for 0.0.1: %v; want ErrMissing naming 0.0.1 and the libcurl/%s it found", err, release)
	}
	var path string
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libcurl.so.4", "/usr/lib/aarch64-linux-gnu/libcurl.so.4", "/usr/lib64/libcurl.so.4"} {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Log("the system's libcurl.so.4 is not in a directory this test knows: KALAB_LIBCURL not checked")
		return
	}
	t.Setenv("KALAB_LIBCURL", "/nonexistent/libcurl.so.4:"+path)
	if id, err := identify(release); err != nil || !strings.Contains(id.Version, "("+path+")") {
		t.Errorf("KALAB_LIBCURL=%s: %q, %v; want that file loaded", path, id.Version, err)
	}
}
