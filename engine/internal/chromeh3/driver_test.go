package chromeh3

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkOrigin takes an https origin on loopback, with its port, and nothing else.
func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	for origin, ok := range map[string]bool{
		"https://127.0.0.1:4433":    true,
		"https://localhost:4433/":   true,
		"https://[::1]:4433":        true,
		"http://127.0.0.1:4433":     false,
		"https://127.0.0.1":         false,
		"https://example.com:443":   false,
		"https://10.0.0.1:4433":     false,
		"https://127.0.0.1:4433/x":  false,
		"https://127.0.0.1:4433?q=": false,
	} {
		if _, err := checkOrigin(origin); (err == nil) != ok {
			t.Errorf("checkOrigin(%q) = %v, want ok %v", origin, err, ok)
		}
	}
}

// Every request carries its sequence number in its query, found again in its URL.
func TestSeq(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{"/": "/?kalab-seq=3", "/a?b=1": "/a?b=1&kalab-seq=3"} {
		got := withSeq(path, 3)
		if got != want || seqOf("https://127.0.0.1:1"+got) != "3" {
			t.Errorf("withSeq(%q, 3) = %q (seq %q), want %q", path, got, seqOf("https://127.0.0.1:1"+got), want)
		}
	}
	if seqOf("https://127.0.0.1:1/favicon.ico") != "" {
		t.Error("a request the driver did not make has a sequence number")
	}
}

// fakeBrowser answers the driver's commands on in-memory pipes: a result for Echo (after an
// event), an error for anything else; it hangs up when told to.
func fakeBrowser(t *testing.T) (*cdp, chan string, func()) {
	t.Helper()
	toR, toW := io.Pipe()
	fromR, fromW := io.Pipe()
	events := make(chan string, 10)
	c := newCDP(toW, fromR, func(method, _ string, _ json.RawMessage) { events <- method })
	go func() {
		br := bufio.NewReader(toR)
		for {
			raw, err := br.ReadBytes(0)
			if err != nil {
				return
			}
			var m struct {
				ID     int64
				Method string
			}
			_ = json.Unmarshal(bytes.TrimSuffix(raw, []byte{0}), &m)
			var out []byte
			if m.Method == "Echo" {
				out, _ = json.Marshal(map[string]any{"method": "Echoed", "params": map[string]any{}})
				out = append(out, 0)
				b, _ := json.Marshal(map[string]any{"id": m.ID, "result": map[string]any{"said": "hi"}})
				out = append(append(out, b...), 0)
			} else {
				b, _ := json.Marshal(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "no such method"}})
				out = append(b, 0)
			}
			if _, err := fromW.Write(out); err != nil {
				return
			}
		}
	}()
	return c, events, func() { fromW.Close(); toR.Close() }
}

// The pipe protocol: a reply goes to its call, an error reply is an error, an event goes
// to the handler, and once the browser hangs up every call fails at once.
func TestCDP(t *testing.T) {
	t.Parallel()
	c, events, hangUp := fakeBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out struct{ Said string }
	if err := c.call(ctx, "", "Echo", nil, &out); err != nil || out.Said != "hi" {
		t.Fatalf("Echo: %+v, %v", out, err)
	}
	if ev := <-events; ev != "Echoed" {
		t.Errorf("event %q, want Echoed", ev)
	}
	if err := c.call(ctx, "S1", "Nope", nil, nil); err == nil || !strings.Contains(err.Error(), "no such method") {
		t.Errorf("an error reply gave %v", err)
	}
	hangUp()
	<-c.done
	if err := c.call(ctx, "", "Echo", nil, nil); err == nil || !strings.Contains(err.Error(), "the DevTools pipe closed") {
		t.Errorf("a call after the browser hung up gave %v", err)
	}
}

// A page that cannot load (nothing listens on the origin's UDP port) is an error naming
// Chromium's, with the page's Result; and Chromium is gone when Run returns.
func TestRunFailsCleanlyWithoutServer(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	marker := "--kalab-chromeh3-test=" + filepath.Base(t.TempDir())
	res, err := Run(context.Background(), bin, Options{Origin: "https://" + addr, Timeout: time.Minute, ExtraFlags: []string{marker}})
	if err == nil || !strings.Contains(err.Error(), "net::ERR_") {
		t.Errorf("Run against nothing: %v, want Chromium's net:: error", err)
	}
	if len(res) != 1 || res[0].Err == "" || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("results %+v, want the page load's with its error", res)
	}
	t.Logf("%v", err)
	if pids := running(marker); len(pids) > 0 {
		t.Errorf("Chromium processes %v outlived Run", pids)
	}
}

// running lists the processes whose command line holds arg.
func running(arg string) []string {
	var pids []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(arg)) {
			pids = append(pids, d.Name())
		}
	}
	return pids
}
