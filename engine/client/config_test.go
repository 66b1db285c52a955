package client

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client/wire"
)

func TestConfigRejectsBadInput(t *testing.T) {
	t.Parallel()
	ok := Config{Addr: "127.0.0.1:8080"}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown implementation", func(c *Config) { c.Implementation = "curl" }, "implementation"},
		{"no port", func(c *Config) { c.Addr = "127.0.0.1" }, "addr"},
		{"not loopback", func(c *Config) { c.Addr = "192.0.2.1:80" }, "loopback"},
		{"bad method", func(c *Config) { c.Method = "GE T" }, "method"},
		{"bad path", func(c *Config) { c.Path = "x" }, "path"},
		{"header injection", func(c *Config) { c.Headers = map[string]string{"A": "b\r\nEvil: 1"} }, "line break"},
		{"bad header name", func(c *Config) { c.Headers = map[string]string{"A B": "c"} }, "header name"},
		{"tls version", func(c *Config) { c.TLSVersion = 0x0301 }, "tls version"},
		{"hint parser", func(c *Config) { c.HintParser = "go" }, "hint parser"},
		{"scheduling", func(c *Config) { c.Scheduling = "random" }, "scheduling"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "negative"},
		{"negative max conns", func(c *Config) { c.MaxConns = -1 }, "negative"},
		{"retry class", func(c *Config) { c.Retry.On = []ErrorClass{"boom"} }, "unknown error class"},
		{"go hint", func(c *Config) { c.Implementation, c.HonorHint = ImplGoNetHTTP, true }, "Keep-Alive hint"},
		{"h2 liveness", func(c *Config) { c.HTTP2, c.LivenessCheck = true, true }, "liveness"},
		{"go fifo", func(c *Config) { c.Implementation, c.Scheduling = ImplGoNetHTTP, FIFO }, "fifo"},
	}
	for _, tc := range cases {
		cfg := ok
		tc.edit(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	for _, addr := range []string{"127.0.0.1:1", "localhost:1", "[::1]:1"} {
		if _, err := New(Config{Addr: addr}); err != nil {
			t.Errorf("New(%s): %v", addr, err)
		}
	}
}

func TestProfilesAreValid(t *testing.T) {
	t.Parallel()
	if len(profileNames()) != 8 {
		t.Fatalf("presets %v, want the 8 of the issue", profileNames())
	}
	for _, name := range profileNames() {
		cfg, err := profile(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Addr = "127.0.0.1:1"
		c, err := New(cfg)
		if err != nil {
			t.Errorf("preset %s: %v", name, err)
			continue
		}
		c.Close()
	}
	if _, err := profile("nope"); err == nil {
		t.Fatal("unknown preset accepted")
	}
}

func TestParseHint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value, parser string
		want          time.Duration
		ok            bool
	}{
		{"timeout=5", HintNode, 5 * time.Second, true},
		{"timeout=5, max=100", HintNode, 5 * time.Second, true},
		{"max=100, timeout=5", HintNode, 0, false},
		{"max=100, timeout=5", HintUndici, 5 * time.Second, true},
		{"Timeout=5", HintNode, 0, false}, // case-sensitive, like the regexes
		{"timeout=", HintUndici, 0, false},
		{"timeout=x, timeout=7", HintUndici, 7 * time.Second, true},
		{"timeout=99999999999999999999", HintNode, (1 << 31) * time.Second, true}, // capped, so N seconds cannot overflow,
		{"", HintNode, 0, false},
	}
	for _, tc := range cases {
		got, ok := wire.ParseHint([]byte(tc.value), tc.parser == HintUndici)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseHint(%q, %s) = %v, %v; want %v, %v", tc.value, tc.parser, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzReadResponse(f *testing.F) {
	seeds := []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nKeep-Alive: timeout=5\r\n\r\n",
	}
	if len(seeds) == 0 {
		f.Fatal("empty seed corpus")
	}
	for _, s := range seeds {
		f.Add(s)
	}
	cfg := Config{HonorHint: true, HintParser: HintUndici, Method: "GET"}
	f.Fuzz(func(t *testing.T, s string) {
		readResponse(bufioReader(s), &cfg, false) // must not panic or loop forever
	})
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), 4096) }
