package chromeh3

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/childenv"
	"github.com/kalab-dev/kalab/engine/internal/proc"
)

// flags are the command line of a headless Chromium that speaks HTTP/3 to the origin and
// to nothing else. What each QUIC flag does was measured with Chromium 156:
//
//   - The container flags are cmd/kalab/internal/browsertest's (no sandbox as root, no GPU, no
//     background network, a fresh profile), without its --disable-quic.
//   - --origin-to-force-quic-on is essential: it makes Chromium use QUIC for the origin from
//     its first request, with no Alt-Svc learned over TCP first (without it the page load
//     goes to TCP: net::ERR_CONNECTION_REFUSED). --enable-quic only states the default.
//   - --ignore-certificate-errors-spki-list is essential for a self-signed certificate:
//     --ignore-certificate-errors alone does not reach QUIC's handshake
//     (net::ERR_QUIC_PROTOCOL_ERROR).
//   - --host-resolver-rules sends localhost to 127.0.0.1 (not ::1, where the server may not
//     listen) and every other name nowhere: the browser stays on the machine.
func flags(opt Options, profile string, origin *url.URL) []string {
	f := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--user-data-dir=" + profile, "--remote-debugging-pipe",
		"--enable-quic", "--origin-to-force-quic-on=" + origin.Host,
		"--host-resolver-rules=MAP localhost 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
	}
	if opt.CertSPKI != "" {
		f = append(f, "--ignore-certificate-errors-spki-list="+opt.CertSPKI)
	}
	return append(append(f, opt.ExtraFlags...), "about:blank")
}

// browser is a running Chromium and the DevTools connection to it.
type browser struct {
	cmd    *exec.Cmd
	group  *proc.Group
	cdp    *cdp
	toIt   *os.File // our end of its command pipe
	fromIt *os.File // our end of its reply pipe
	waited chan error
	stderr *tail
}

// launch starts bin with args in a guarded process group (engine/internal/proc), the two
// DevTools pipes at its descriptors 3 and 4, and tmp as its TMPDIR; root is the directory
// the guard's cleaner removes if kalab dies. onEvent receives the DevTools events.
func launch(bin string, args []string, root, tmp string, onEvent func(method, session string, params json.RawMessage)) (*browser, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	replyR, replyW, err := os.Pipe()
	if err != nil {
		// the error returned says what failed
		_ = cmdR.Close()
		_ = cmdW.Close()
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = childenv.For(nil, []string{"TMPDIR=" + tmp})
	cmd.ExtraFiles = []*os.File{cmdR, replyW}
	cmd.WaitDelay = 2 * time.Second // a process that escaped the group keeps no pipe open
	b := &browser{cmd: cmd, toIt: cmdW, fromIt: replyR, waited: make(chan error, 1), stderr: &tail{max: 8 << 10}}
	cmd.Stderr = b.stderr
	b.group, err = proc.Start(cmd, root)
	// Chromium holds its own ends now.
	_ = cmdR.Close()
	_ = replyW.Close()
	if err != nil {
		// the error returned says what failed
		_ = cmdW.Close()
		_ = replyR.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { b.waited <- cmd.Wait() }()
	b.cdp = newCDP(cmdW, replyR, onEvent)
	return b, nil
}

// close kills the whole group (Chromium's renderers, GPU and network processes too), waits
// for its leader and lets go of the pipes.
func (b *browser) close() {
	b.group.Kill()
	select {
	case werr := <-b.waited:
		_ = werr // killed above: how it exited says nothing more
	case <-time.After(10 * time.Second):
	}
	b.group.Release()
	// shutting down: nothing waits on how this close went
	_ = b.toIt.Close()
	_ = b.fromIt.Close()
	<-b.cdp.done
}

// tail keeps the last max bytes written to it: what Chromium printed last, for an error.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// String returns the last lines kept, less the D-Bus complaints of a machine without a bus
// (a container), which say nothing of the run.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keep []string
	for line := range strings.Lines(string(bytes.ToValidUTF8(t.buf, nil))) {
		if !strings.Contains(line, "dbus") {
			keep = append(keep, strings.TrimRight(line, "\n"))
		}
	}
	return strings.TrimSpace(strings.Join(keep[max(0, len(keep)-20):], "\n"))
}
