package client

import (
	"bytes"
	"strings"
	"testing"
)

func TestRequestBody(t *testing.T) {
	cfg, err := Config{Addr: "127.0.0.1:1", Method: "PUT", BodyBytes: 70000}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	req := buildRequest(&cfg)
	head, body, ok := bytes.Cut(req, []byte("\r\n\r\n"))
	if !ok || !strings.Contains(string(head), "\r\nContent-Length: 70000") || len(body) != 70000 {
		t.Fatalf("request head %q, body %d bytes; want Content-Length: 70000 and 70000 body bytes", head, len(body))
	}
	cfg, _ = Config{Addr: "127.0.0.1:1", Method: "POST"}.normalized()
	if req := string(buildRequest(&cfg)); !strings.Contains(req, "\r\nContent-Length: 0\r\n") || !strings.HasSuffix(req, "\r\n\r\n") {
		t.Errorf("POST without a body: %q", req)
	}
	for _, bad := range []Config{
		{Addr: "127.0.0.1:1", Method: "HEAD", BodyBytes: 1},
		{Addr: "127.0.0.1:1", Method: "POST", BodyBytes: -1},
		{Addr: "127.0.0.1:1", Method: "POST", BodyBytes: 64<<20 + 1},
	} {
		if _, err := bad.normalized(); err == nil {
			t.Errorf("%s with %d body bytes accepted", bad.Method, bad.BodyBytes)
		}
	}
}
