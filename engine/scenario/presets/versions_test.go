package presets

import "testing"

// VersionOf reads each program's own version out of the lines the bundled adapters' probes
// and the real servers print, and nothing out of a line that does not name it.
func TestVersionOf(t *testing.T) {
	t.Parallel()
	curl := "curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1 OpenSSL/3.0.19 zlib/1.2.13"
	cases := []struct{ program, line, want string }{
		{"undici", "node 20.20.2 undici 6.24.1 openssl 3.0.19", "6.24.1"},
		{"node", "node 20.20.2 undici 6.24.1 openssl 3.0.19", "20.20.2"},
		{"go", "go version go1.26.8 linux/amd64", "1.26.8"},
		{"requests", "python 3.11.7 requests 2.34.2 urllib3 2.7.0 openssl 3.0.19", "2.34.2"},
		{"curl", curl, "7.88.1"},
		{"libcurl", "python 3.11.7 libcurl/7.88.1 OpenSSL/3.0.19", "7.88.1"},
		{"libcurl", curl, "7.88.1"},
		{"nginx", "1.22.1", "1.22.1"},
		{"node", "v20.20.2", "20.20.2"},
		{"undici", "node 16.20.0 openssl 1.1.1", ""},
		{"undici", "node 20.20.2 undici 6.24.1 openssl 3.0.19; fetch from undici 7.30.3 (/opt/kalab/undici7/node_modules/undici)", "7.30.3"},
		{"libcurl", "python 3.11.7 libcurl/8.14.1 OpenSSL/3.0.19 (/opt/kalab/libcurl-8.14.1/usr/lib/x86_64-linux-gnu/libcurl.so.4)", "8.14.1"},
		{"requests", "", ""},
	}
	for _, c := range cases {
		if got := VersionOf(c.program, c.line); got != c.want {
			t.Errorf("VersionOf(%q, %q) = %q, want %q", c.program, c.line, got, c.want)
		}
	}
}

// A preset verifies the versions it lists, per program, and the releases of the same major
// and minor (named as that range), and lists each checked version once with the last date
// it agreed.
func TestVerifiesByRelease(t *testing.T) {
	t.Parallel()
	p := &Preset{Checked: []Check{
		{Program: "requests", Version: "2.34.2", On: "2026-12-01"},
		{Program: "requests", Version: "2.34.2", On: "2026-12-02"},
		{Program: "requests", Version: "2.32.3", On: "2026-11-02"},
		{Program: "libcurl", Version: "7.88.1", On: "2026-12-02"},
	}}
	for _, c := range []struct {
		program, version string
		want             bool
	}{{"requests", "2.34.2", true}, {"requests", "2.34", false}, {"requests", "2.34.20", true}, {"requests", "2.35.2", false},
		{"requests", "3.34.2", false}, {"curl", "7.88.1", false}, {"libcurl", "7.88.1", true}, {"libcurl", "7.88.0", true}, {"libcurl", "7.8.1", false}} {
		if got := p.Verifies(c.program, c.version); got != c.want {
			t.Errorf("Verifies(%s, %s) = %v, want %v", c.program, c.version, got, c.want)
		}
	}
	for version, want := range map[string]string{"2.34.2": "2.34.2", "2.34.20": "2.34.x (2.34.2 checked)", "2.32.0": "2.32.x (2.32.3 checked)", "2.33.0": ""} {
		if got := p.VerifiedAs("requests", version); got != want {
			t.Errorf("VerifiedAs(requests, %s) = %q, want %q", version, got, want)
		}
	}
	if got, want := p.VersionsOf("requests"), "2.34.2 on 2026-12-02, 2.32.3 on 2026-11-02"; got != want {
		t.Errorf("VersionsOf(requests) = %q, want %q", got, want)
	}
	if got := p.VersionsOf("node"); got != "" {
		t.Errorf("VersionsOf(node) = %q, want none", got)
	}
}
