package htmlreport

import (
	"os"
	"testing"
)

func TestZZGen(t *testing.T) {
	out := os.Getenv("GEN_OUT")
	if out == "" {
		t.Skip()
	}
	dir := writeResults(t, manyLanes(10000), nil)
	res, _ := Load(dir)
	if err := WriteFile(out, res, Options{}); err != nil {
		t.Fatal(err)
	}
}
