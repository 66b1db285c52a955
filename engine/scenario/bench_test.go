package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// BenchmarkLoad1000Files loads and validates 1,000 scenario files (copies of the bundled
// suite under distinct names), the README's "1,000 files under 1 s" target.
func BenchmarkLoad1000Files(b *testing.B) {
	src, _ := filepath.Glob("../../scenarios/*.yaml")
	if len(src) == 0 {
		b.Fatal("no bundled scenarios")
	}
	dir := b.TempDir()
	var files []string
	for i := 0; i < 1000; i++ {
		data, err := os.ReadFile(src[i%len(src)])
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("s%04d.yaml", i))
		// Distinct names, as LoadFiles rejects duplicates across files.
		data = renameScenario(data, fmt.Sprintf("copy-%04d", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		files = append(files, p)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := LoadFiles(files); err != nil {
			b.Fatal(err)
		}
	}
}

var nameLine = regexp.MustCompile(`(?m)^name: .*$`)

func renameScenario(data []byte, name string) []byte {
	return nameLine.ReplaceAll(data, []byte("name: "+name))
}
