package replay

import (
	"bufio"
	"bytes"
	"testing"
)

// drain reads everything a parser yields from data; it must never panic or loop.
func drain(t *testing.T, format string, data []byte) {
	p, err := newParser(Config{Format: format}, bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(data)+2; i++ {
		_, _, err := p.next()
		if err != nil {
			if _, bad := err.(badLine); !bad {
				return
			}
		}
	}
	t.Fatalf("%s: more records than bytes", format)
}

func FuzzParsers(f *testing.F) {
	for _, s := range []string{nginxLog, harDoc, `{"time": 1, "client": "a"}`, `{"log": {"entries": [{}, 1, "x"]}}`, `"`, `[02/Dec/2026:03:00:00 +0000] "`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range Formats {
			drain(t, format, data)
		}
	})
}
