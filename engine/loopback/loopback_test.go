package loopback

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"127.0.0.1:80", "127.0.0.1:80"},
		{"127.0.0.2:1", "127.0.0.2:1"},
		{"localhost:8080", "127.0.0.1:8080"},
		{"LocalHost:0", "127.0.0.1:0"},
		{"[::1]:443", "[::1]:443"},
		{"[::ffff:127.0.0.1]:80", "127.0.0.1:80"},
	} {
		if got, err := Check(c.in, false); err != nil || got != c.want {
			t.Errorf("Check(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"192.0.2.1:80", "0.0.0.0:80", ":80", "[::]:80", "example.com:80", "localhost.example.com:80",
		"127.0.0.1.nip.io:80", "[fe80::1%lo]:80", "10.0.0.1:0", "[::ffff:192.0.2.1]:80"} {
		if got, err := Check(in, false); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Check(%q) = %q, %v; want ErrNotLoopback", in, got, err)
		}
		if got, err := Check(in, true); err != nil || got != in {
			t.Errorf("Check(%q, allowRemote) = %q, %v; want it unchanged", in, got, err)
		}
	}
	if _, err := Check("127.0.0.1", true); err == nil || errors.Is(err, ErrNotLoopback) {
		t.Errorf("an address without a port: %v", err)
	}
}
