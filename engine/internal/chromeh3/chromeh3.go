// Package chromeh3 drives headless Chromium as a real HTTP/3 client: it starts Chromium
// with QUIC forced on for one loopback origin, talks to it over the DevTools protocol on
// --remote-debugging-pipe (no websocket), loads a page of the origin and makes the page
// fetch() each step's request, reading from Chromium's own Network events which protocol
// carried it and on which connection. It is the truth a preset's HTTP/3 connection reuse is
// checked against.
//
// The page load is a request too (Result 0): it opens the first QUIC connection, which the
// first step reuses when it comes soon enough. Chromium's favicon request is blocked, so
// the server sees the driver's requests and no others; each carries a query of its own
// (kalab-seq=N) and is sent with cache: "no-store".
package chromeh3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/loopback"
)

// Step is one request of a run: wait Pause (after the previous request's answer, or after
// the page loaded), then send Method (GET when empty) to Path ("/" when empty) on the
// origin.
type Step struct {
	Pause        time.Duration
	Method, Path string
}

// Result is what Chromium reported of one request. Seq 0 is the page load that gives the
// page its origin (it opens the first connection); Seq i is Steps[i-1].
type Result struct {
	Seq          int
	Start        time.Time     // when the driver asked the page to send it
	Latency      time.Duration // from fetch() to the whole body read, as the page measured it (Seq 0: navigation to load event)
	Status       int
	Protocol     string // Chromium's name for it: "h3" for HTTP/3
	ConnectionID int    // Chromium's connectionId for the connection that carried it
	Reused       bool   // Chromium's connectionReused
	RemotePort   int    // the server's port Chromium sent it to
	Err          string // fetch()'s or Chromium's error; Status is 0 then
}

// Options is one run.
type Options struct {
	Origin     string // https://127.0.0.1:PORT or https://localhost:PORT
	Page       string // the path the page is loaded from; "/" when empty
	CertSPKI   string // base64 SHA-256 of the server certificate's SubjectPublicKeyInfo; empty: it must verify
	Steps      []Step
	Timeout    time.Duration // for the whole run; the pauses plus 2 minutes when zero
	ExtraFlags []string      // more Chromium flags, after the driver's own
}

// eventWait is how long a request's Network event may trail the page's answer: the two
// come from different Chromium processes.
const eventWait = 5 * time.Second

// Run starts Chromium (bin), loads the page and makes the requests of opt.Steps one by
// one, and returns a Result for the page load and for each step. A request that fails is a
// Result with Err; an error means the run could not go on (Chromium did not start, the
// page did not load, the time ran out); the Results made until then come with it. Chromium
// and all its processes are gone when Run returns.
func Run(ctx context.Context, bin string, opt Options) ([]Result, error) {
	origin, err := checkOrigin(opt.Origin)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout(opt))
	defer cancel()
	// One directory of kalab's holds Chromium's profile and its TMPDIR (where it makes its
	// org.chromium.Chromium.* directories and leaves them when killed): removed after the
	// group is killed and its leader waited for, or by proc's cleaner if kalab dies first.
	root, err := os.MkdirTemp(tempBase(os.TempDir()), "kc")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(root) }() // a temporary directory: nothing more to do if removing it fails
	profile, tmp := filepath.Join(root, "profile"), filepath.Join(root, "t")
	for _, d := range []string{profile, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	ev := newEvents()
	b, err := launch(bin, flags(opt, profile, origin), root, tmp, ev.record)
	if err != nil {
		return nil, err
	}
	defer b.close()
	p := &page{b: b, ev: ev, origin: strings.TrimSuffix(origin.String(), "/")}
	res, err := p.run(ctx, opt)
	if err != nil && b.stderr.String() != "" {
		err = fmt.Errorf("%w\nChromium's last words:\n%s", err, b.stderr)
	}
	return res, err
}

// Chromium makes its singleton socket at TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket
// and dies when that path is longer than a Unix socket's (sockaddr_un: 108 bytes with the
// NUL; chrome/browser/process_singleton_posix.cc "Socket path too long").
const (
	sunPathMax = 107
	socketTail = len("/org.chromium.Chromium.XXXXXX/SingletonSocket")
	rootTail   = len("/kc") + 10 + len("/t") // os.MkdirTemp's name, then Chromium's TMPDIR in it
)

// tempBase is where kalab makes Chromium's directory: the user's temporary directory when
// Chromium's socket path fits under it, else /tmp, whose path always does.
func tempBase(tmpdir string) string {
	if runtime.GOOS == "windows" || len(tmpdir)+rootTail+socketTail <= sunPathMax {
		return tmpdir
	}
	return "/tmp"
}

// checkOrigin accepts an https origin on a loopback address, with its port.
func checkOrigin(origin string) (*url.URL, error) {
	u, err := url.Parse(origin)
	if err != nil {
		return nil, fmt.Errorf("chromeh3: origin %q: %w", origin, err)
	}
	if u.Scheme != "https" || u.Port() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("chromeh3: origin %q: want https://HOST:PORT", origin)
	}
	if _, err := loopback.Check(u.Host, false); err != nil {
		return nil, fmt.Errorf("chromeh3: origin: %w", err)
	}
	u.Path = ""
	return u, nil
}

// runTimeout is opt.Timeout, or the pauses plus two minutes.
func runTimeout(opt Options) time.Duration {
	if opt.Timeout > 0 {
		return opt.Timeout
	}
	d := 2 * time.Minute
	for _, s := range opt.Steps {
		d += s.Pause
	}
	return d
}

// Version returns what bin --version prints, such as "Chromium 156.0.8078.114 built on
// Debian GNU/Linux 12 (bookworm)".
func Version(bin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if v == "" {
		return "", errors.New(bin + " --version printed nothing")
	}
	return v, nil
}

// page is the one tab a run uses.
type page struct {
	b       *browser
	ev      *events
	origin  string // https://HOST:PORT
	session string
}

// run opens the tab, loads the page and makes each step's request.
func (p *page) run(ctx context.Context, opt Options) ([]Result, error) {
	if err := p.open(ctx); err != nil {
		return nil, err
	}
	path := opt.Page
	if path == "" {
		path = "/"
	}
	first, err := p.load(ctx, path)
	res := []Result{first}
	if err != nil {
		return res, err
	}
	for i, s := range opt.Steps {
		select {
		case <-time.After(s.Pause):
		case <-ctx.Done():
			return res, fmt.Errorf("step %d: %w", i+1, ctx.Err())
		}
		r, err := p.fetch(ctx, i+1, s)
		res = append(res, r)
		if err != nil {
			return res, fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return res, nil
}

// open makes the tab and attaches to it, with its Network and Page events on.
func (p *page) open(ctx context.Context) error {
	var target struct{ TargetID string }
	if err := p.b.cdp.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return err
	}
	var attached struct{ SessionID string }
	if err := p.b.cdp.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return err
	}
	p.session = attached.SessionID
	for _, m := range []string{"Network.enable", "Page.enable"} {
		if err := p.b.cdp.call(ctx, p.session, m, map[string]any{}, nil); err != nil {
			return err
		}
	}
	return p.b.cdp.call(ctx, p.session, "Network.setBlockedURLs", map[string]any{"urls": []string{"*/favicon.ico"}}, nil)
}

// load navigates the tab to path on the origin (request 0) and waits for its load event.
func (p *page) load(ctx context.Context, path string) (Result, error) {
	r := Result{Seq: 0, Start: time.Now()}
	p.ev.mu.Lock()
	p.ev.loaded = false // about:blank's own load event does not count
	p.ev.mu.Unlock()
	var nav struct{ ErrorText string }
	if err := p.b.cdp.call(ctx, p.session, "Page.navigate", map[string]any{"url": p.origin + withSeq(path, 0)}, &nav); err != nil {
		return r, err
	}
	if nav.ErrorText != "" {
		r.Err = nav.ErrorText
		return r, fmt.Errorf("loading the page %s: %s", path, nav.ErrorText)
	}
	if !p.ev.waitFor(ctx, func() bool { return p.ev.loaded }) {
		return r, fmt.Errorf("loading the page %s: %w", path, ctx.Err())
	}
	r.Latency = time.Since(r.Start)
	return p.withEvent(ctx, r)
}

// fetch makes the page send step s as request seq and waits for its answer.
func (p *page) fetch(ctx context.Context, seq int, s Step) (Result, error) {
	method, path := s.Method, s.Path
	if method == "" {
		method = "GET"
	}
	if path == "" {
		path = "/"
	}
	url, _ := json.Marshal(p.origin + withSeq(path, seq))
	m, _ := json.Marshal(method)
	expr := `(async () => {
  const t0 = performance.now();
  try {
    const r = await fetch(` + string(url) + `, {method: ` + string(m) + `, cache: "no-store"});
    await r.arrayBuffer();
    return {status: r.status, ms: performance.now() - t0};
  } catch (e) {
    return {error: String(e), ms: performance.now() - t0};
  }
})()`
	r := Result{Seq: seq, Start: time.Now()}
	var out struct {
		Result struct {
			Value struct {
				Status int
				MS     float64
				Error  string
			}
		}
		ExceptionDetails *struct{ Text string }
	}
	args := map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}
	if err := p.b.cdp.call(ctx, p.session, "Runtime.evaluate", args, &out); err != nil {
		return r, err
	}
	if out.ExceptionDetails != nil {
		return r, fmt.Errorf("the page's fetch threw: %s", out.ExceptionDetails.Text)
	}
	v := out.Result.Value
	r.Latency = time.Duration(v.MS * float64(time.Millisecond))
	r.Status, r.Err = v.Status, v.Error
	return p.withEvent(ctx, r)
}

// withEvent adds to r what Chromium's Network events said of request r.Seq.
func (p *page) withEvent(ctx context.Context, r Result) (Result, error) {
	wctx, cancel := context.WithTimeout(ctx, eventWait)
	defer cancel()
	resp, failure, ok := p.ev.outcome(wctx, r.Seq)
	switch {
	case !ok && ctx.Err() != nil:
		return r, ctx.Err()
	case !ok:
		if r.Err == "" {
			r.Err = "Chromium reported neither a response nor a failure"
		}
	case failure != "" && resp.URL == "":
		r.Err = strings.TrimSpace(strings.TrimPrefix(r.Err+" "+failure, " "))
	default:
		if r.Status == 0 {
			r.Status = resp.Status
		}
		r.Protocol, r.Reused, r.RemotePort = resp.Protocol, resp.ConnectionReused, resp.RemotePort
		r.ConnectionID = int(resp.ConnectionID)
	}
	return r, nil
}
