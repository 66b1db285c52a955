package htmlreport

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReportOutNamesADirectory: kalab report's --out names a directory, as run's and merge's
// do; --html names the file; the older --out FILE.html still works, marked as older.
func TestReportOutNamesADirectory(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		name, out, html, want string
		older, err            bool
	}{
		{name: "default", want: filepath.Join("res", "report.html")},
		{name: "a directory, made", out: filepath.Join(tmp, "new"), want: filepath.Join(tmp, "new", "report.html")},
		{name: "a file", html: filepath.Join(tmp, "r.html"), want: filepath.Join(tmp, "r.html")},
		{name: "the older spelling", out: filepath.Join(tmp, "o.HTML"), want: filepath.Join(tmp, "o.HTML"), older: true},
		{name: "both", out: tmp, html: "x.html", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, older, err := Path("res", tc.out, tc.html)
			if (err != nil) != tc.err || got != tc.want || older != tc.older {
				t.Fatalf("Path = %q, %v, %v; want %q, older %v, error %v", got, older, err, tc.want, tc.older, tc.err)
			}
			if tc.out != "" && !tc.err && !tc.older {
				if st, err := os.Stat(tc.out); err != nil || !st.IsDir() {
					t.Errorf("--out %s was not made a directory: %v", tc.out, err)
				}
			}
		})
	}
}
