package client

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"regexp"
	"testing"
)

// FuzzReadResponseVsNetHTTP is a differential fuzz of the model client's HTTP/1.1 response
// reader against net/http's (http.ReadResponse, skipping interim 1xx responses as the
// Transport does). Where both accept a response they must agree on the status, the body
// length, whether the connection may be reused, and where the response ends in the stream:
// a disagreement on the last one would make the model client read the next response from
// the middle of a body. A response net/http accepts must not be refused by kalab. kalab may
// accept what net/http refuses (duplicate Content-Length values, bad header names): it is a
// model of a client, lenient on purpose, and such inputs are skipped.
//
// Run: go test ./engine/client -run '^$' -fuzz FuzzReadResponseVsNetHTTP -fuzztime 2m
func FuzzReadResponseVsNetHTTP(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\nNEXT",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.1 200 OK\r\n\r\nbody until close",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
		"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
		"HTTP/1.1 200 OK\r\nX: a\r\n Content-Length: 5\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	cfg := &Config{Method: "GET", HonorHint: true, HintParser: "node"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		kbr := bufio.NewReaderSize(bytes.NewReader(data), 4096)
		kr, kerr := readResponse(kbr, cfg, false) // a GET: the body is read
		kRest := rest(kbr)

		nbr := bufio.NewReaderSize(bytes.NewReader(data), 4096)
		req, _ := http.NewRequest("GET", "http://x/", nil)
		var resp *http.Response
		var nerr error
		for {
			resp, nerr = http.ReadResponse(nbr, req)
			if nerr != nil || resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == 101 {
				break
			}
		}
		if nerr != nil {
			return // net/http refuses it; kalab may be lenient
		}
		if resp.ProtoMajor != 1 || resp.StatusCode < 100 || resp.StatusCode > 599 || !strictStatusLine.Match(data) {
			// net/http also reads "HTTP/0.1 000" and "HTTP/1.0  200" (two spaces); kalab
			// reads the status line of RFC 9112 section 4 (HTTP-version SP 3DIGIT SP
			// reason) with a status from 100 to 599 (RFC 9110 section 15).
			return
		}
		n, berr := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if berr != nil {
			return // a truncated or malformed body: both fail, in their own words
		}
		nRest := rest(nbr)
		if head := len(data) - int(nRest) - int(n); head >= 0 && obsFold.Match(data[:head]) {
			// A folded header line (RFC 9112 section 5.2 obs-fold): net/http unfolds it,
			// kalab refuses it. A known difference, left as is: no server kalab runs
			// sends one, and unfolding would cost the reader its allocation-free path.
			return
		}
		if kerr != nil {
			t.Fatalf("net/http reads status %d with a %d-byte body; kalab refuses it: %v\ninput %q", resp.StatusCode, n, kerr, data)
		}
		if kr.status != resp.StatusCode {
			t.Fatalf("status: kalab %d, net/http %d\ninput %q", kr.status, resp.StatusCode, data)
		}
		if kr.body != n {
			t.Fatalf("body: kalab %d bytes, net/http %d\ninput %q", kr.body, n, data)
		}
		if kRest != nRest {
			t.Fatalf("the response ends at a different place: kalab leaves %d bytes, net/http %d\ninput %q", kRest, nRest, data)
		}
		if kr.keepAlive == resp.Close && resp.StatusCode != 101 {
			t.Fatalf("reuse: kalab keepAlive=%v, net/http Close=%v\ninput %q", kr.keepAlive, resp.Close, data)
		}
	})
}

// strictStatusLine is the start of an RFC 9112 status line.
var strictStatusLine = regexp.MustCompile(`^HTTP/1\.[0-9] [1-5][0-9][0-9](\r?\n| )`)

// obsFold finds a header line that starts with a space or a tab (a continuation line).
var obsFold = regexp.MustCompile(`\n[ \t]`)

// rest is how many bytes of the stream follow what has been read.
func rest(br *bufio.Reader) int64 {
	n, _ := io.Copy(io.Discard, br)
	return n
}
