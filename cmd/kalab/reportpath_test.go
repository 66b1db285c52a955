package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportOutNamesADirectory: kalab report's --out names a directory, as run's and merge's
// do; --html names the file; the older --out FILE.html still works and says what to use.
func TestReportOutNamesADirectory(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		name, out, html, want, warn string
		err                         bool
	}{
		{name: "default", want: filepath.Join("res", "report.html")},
		{name: "a directory, made", out: filepath.Join(tmp, "new"), want: filepath.Join(tmp, "new", "report.html")},
		{name: "a file", html: filepath.Join(tmp, "r.html"), want: filepath.Join(tmp, "r.html")},
		{name: "the older spelling", out: filepath.Join(tmp, "o.HTML"), want: filepath.Join(tmp, "o.HTML"), warn: "use --html"},
		{name: "both", out: tmp, html: "x.html", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := reportPath("res", tc.out, tc.html, &stderr)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("reportPath = %q, %v; want %q, error %v", got, err, tc.want, tc.err)
			}
			if !strings.Contains(stderr.String(), tc.warn) || (tc.warn == "" && stderr.Len() > 0) {
				t.Errorf("stderr %q, want it to say %q", stderr.String(), tc.warn)
			}
			if tc.out != "" && !tc.err && tc.warn == "" {
				if st, err := os.Stat(tc.out); err != nil || !st.IsDir() {
					t.Errorf("--out %s was not made a directory: %v", tc.out, err)
				}
			}
		})
	}
}
