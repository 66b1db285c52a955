package conntrack

import "testing"

// serverGoodbye knows a closing chunk by its bytes, and nothing an answer can be.
func TestServerGoodbyeByContent(t *testing.T) {
	goaway := []byte{0, 0, 8, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"TLS 1.3 close_notify", append([]byte{0x17, 0x03, 0x03, 0x00, 0x13}, make([]byte, 19)...), true},
		{"TLS 1.2 alert", append([]byte{0x15, 0x03, 0x03, 0x00, 0x1a}, make([]byte, 26)...), true},
		{"HTTP/2 GOAWAY", goaway, true},
		{"HTTP/2 GOAWAY with a length that is not its size", append(goaway, 0), false},
		{"a TLS 1.3 record with a little data", append([]byte{0x17, 0x03, 0x03, 0x00, 0x1a}, make([]byte, 26)...), false},
		{"an HTTP/1.1 answer", []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), false},
		{"an HTTP/2 SETTINGS frame", []byte{0, 0, 6, 0x04, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100}, false},
		{"zeros", make([]byte, 24), false},
	} {
		if got := serverGoodbye(tc.data); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
