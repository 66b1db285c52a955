// Package realserver starts, identifies and stops the real HTTP servers a run puts behind
// its latency proxy: nginx, Node or HAProxy configured from plain settings, any command
// given a port, or a server the user already runs at a URL.
package realserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/kalab-dev/kalab/engine/atomicfile"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/childenv"
	"github.com/kalab-dev/kalab/engine/internal/proc"
	"github.com/kalab-dev/kalab/engine/loopback"
	"github.com/kalab-dev/kalab/engine/server"
)

// Kind is the sort of real server.
type Kind string

// The kinds of real server.
const (
	Nginx   Kind = "nginx"
	Node    Kind = "node"
	HAProxy Kind = "haproxy"
	Command Kind = "command" // any program, started with a shell command given a port
	URL     Kind = "url"     // a server the user already runs; kalab only connects to it
)

// Config is what a run asks of a real server. Durations are real time (already scaled).
// The zero values of the HTTP fields mean what they mean for the embedded server.
type Config struct {
	Kind Kind
	// Command is the shell command for Kind Command; {port}, {cert} and {key} are replaced
	// with the loopback port it must listen on and the PEM files of the run's certificate.
	Command string
	// URL is the server's address for Kind URL: http or https, host and port.
	URL string
	// AllowRemote lets a URL name a host outside loopback.
	AllowRemote bool
	// Program is the executable for nginx, node or haproxy; empty looks it up on PATH.
	Program string
	// Env is the scenario's env: entries (NAME=value, or NAME to pass kalab's own value);
	// the server gets only these and an allowlist (engine/internal/childenv).
	Env []string

	TLS            bool
	TLSVersion     uint16 // tls.VersionTLS13 (default) or tls.VersionTLS12
	SessionTickets bool
	HTTP2          bool
	// IdleTimeout is when the server should close an idle connection; 0 never.
	IdleTimeout time.Duration
	// Hint is the Keep-Alive response header value wanted, "" for none, without the
	// ", max=N" a server adds by itself when it limits requests (Node does).
	Hint string
	// HintOnlyIfAsked sends the hint only to requests that asked for keep-alive.
	HintOnlyIfAsked bool
	// MaxRequests caps requests per connection; 0 is unlimited.
	MaxRequests int
	// CloseEvery closes the connection after every N-th response; 0 never.
	CloseEvery int
	// MaxConcurrentStreams is the HTTP/2 stream limit; 0 keeps the server's default.
	MaxConcurrentStreams int
	Status               int // 0 means 200
	BodyBytes            int
	Delay                time.Duration
	// Events are the reloads and drains (server.Event with Kind server.EventGoAway or
	// server.EventDrain, no grace, and a time) kalab gives nginx during the run, as nginx -s
	// reload and nginx -s quit do: SIGHUP or SIGQUIT to its master process.
	Events []server.Event

	// Upstream, when set, makes nginx or HAProxy a reverse proxy to this loopback address
	// instead of answering requests itself: a balancer of a run's path. IdleTimeout is then
	// its client-facing idle timeout, and the response fields do not apply.
	Upstream string
	// UpstreamKeepalive is how many idle connections to Upstream it keeps (nginx's upstream
	// keepalive); 0 opens one per request.
	UpstreamKeepalive int
	// UpstreamIdle is how long an idle connection to Upstream is kept (nginx's upstream
	// keepalive_timeout; HAProxy's pool-purge-delay, which closes idle server connections in
	// halves at that interval rather than each after that idle time).
	UpstreamIdle time.Duration

	// LogDir keeps the server's logs and generated configuration; empty keeps them only
	// until Close.
	LogDir string
	// StartTimeout bounds the wait for the server to accept connections; 0 means 15 s.
	StartTimeout time.Duration

	version string // the program's version, as its adapter read it, for prepare
}

// Identity names a real server in the run record.
type Identity struct {
	Kind    Kind   `json:"kind"`
	Name    string `json:"name"`              // nginx, node, haproxy, or what the server calls itself
	Version string `json:"version,omitempty"` // as the program reports it
	Program string `json:"program,omitempty"` // the executable or command started
	URL     string `json:"url,omitempty"`     // what the proxy forwards to
	// ServerHeader is the Server header of a probe request sent before the run.
	ServerHeader string `json:"server_header,omitempty"`
	// Verified is true when the listening socket was checked to belong to the started
	// program's process group (Linux); false where the system does not say, and for a URL.
	Verified bool `json:"verified,omitempty"`
}

// Server is a running real server, or the address of one the user runs.
type Server struct {
	cfg        Config
	addr       string // host:port the proxy dials
	path       string // the request path a URL names, "" otherwise
	roots      *x509.CertPool
	serverName string
	ident      Identity
	logs       []string

	tmp     string
	port    int
	cmd     *exec.Cmd
	group   *proc.Group // the program's process group (nil until started)
	exited  chan struct{}
	waitErr error
	logFile *os.File

	closeOnce sync.Once
	closeErr  error

	eventMu sync.Mutex
	timers  []*time.Timer // the events' timers (ArmEvents), stopped at Close
	closed  bool
}

// adapter builds the command line and files of one kind of managed program.
type adapter interface {
	// program is the executable's default name.
	program() string
	// check reports a setting the program cannot express.
	check(cfg Config) error
	// prepare writes what the program needs into dir and returns its arguments.
	prepare(cfg Config, dir string, port int, files certFiles) (args []string, configFile string, err error)
	// version parses the output of the program's version flag.
	versionArgs() []string
	version(out string) string
}

// ErrMissing marks a server program that is not installed: the run is not run (no
// verdict), not failed; the message says how to install it.
var ErrMissing = errors.New("server program not available")

// debianPackage is the Debian package that installs prog.
func debianPackage(prog string) string {
	if prog == "node" {
		return "nodejs, or Node 20 or later from https://nodejs.org"
	}
	return prog
}

var adapters = map[Kind]adapter{Nginx: nginxAdapter{}, Node: nodeAdapter{}, HAProxy: haproxyAdapter{}}

// Check reports the first setting of cfg the real server cannot express, without starting
// anything.
func Check(cfg Config) error {
	cfg = cfg.normalized()
	switch cfg.Kind {
	case Nginx, Node, HAProxy:
		if cfg.Upstream != "" {
			return checkUpstream(cfg)
		}
		if err := checkEvents(cfg); err != nil {
			return err
		}
		return adapters[cfg.Kind].check(cfg)
	case Command:
		if !strings.Contains(cfg.Command, "{port}") {
			return errors.New("the command must contain {port}, replaced with the loopback port it has to listen on")
		}
		return nil
	case URL:
		_, _, _, err := parseURL(cfg.URL, cfg.AllowRemote)
		return err
	}
	return fmt.Errorf("unknown kind of real server %q", cfg.Kind)
}

func (cfg Config) normalized() Config {
	if cfg.TLSVersion == 0 {
		cfg.TLSVersion = tls.VersionTLS13
	}
	if cfg.Status == 0 {
		cfg.Status = 200
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 15 * time.Second
	}
	return cfg
}

// Start starts the server (or checks the URL), waits until it accepts connections and
// probes it once for its identity. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.normalized()
	if err := Check(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Kind, err)
	}
	s := &Server{cfg: cfg, serverName: server.CertName}
	if cfg.LogDir != "" {
		if err := os.MkdirAll(cfg.LogDir, atomicfile.DirMode); err != nil {
			return nil, fmt.Errorf("%s: creating the log directory: %w", cfg.Kind, err)
		}
	}
	var err error
	if cfg.Kind == URL {
		err = s.startURL()
	} else {
		err = s.startProgram(ctx)
	}
	if err == nil && cfg.Upstream == "" {
		// A proxy's probe would cross it to the hops behind it and leave connections in
		// their pools before the run: a proxy is known by its port's owner alone.
		err = s.probe(ctx)
	}
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("%s: %w", cfg.Kind, err)
	}
	return s, nil
}

// parseURL checks a server URL and returns the address to dial, the TLS flag and the path.
func parseURL(raw string, allowRemote bool) (addr string, tlsOn bool, path string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, "", fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	switch u.Scheme {
	case "http":
	case "https":
		tlsOn = true
	default:
		return "", false, "", fmt.Errorf("%q: the scheme must be http or https", raw)
	}
	if u.User != nil || u.Fragment != "" || u.Host == "" {
		return "", false, "", fmt.Errorf("%q: give scheme://host:port/path, without credentials or a fragment", raw)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[bool]string{false: "80", true: "443"}[tlsOn]
	}
	if addr, err = loopback.Check(net.JoinHostPort(host, port), allowRemote); err != nil {
		return "", false, "", fmt.Errorf("%q is not on loopback; kalab sends traffic off the machine only with --allow-remote", raw)
	}
	path = u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return addr, tlsOn, path, nil
}

func (s *Server) startURL() error {
	addr, tlsOn, path, err := parseURL(s.cfg.URL, s.cfg.AllowRemote)
	if err != nil {
		return err
	}
	if tlsOn != s.cfg.TLS {
		return fmt.Errorf("%q: the scheme and the tls setting disagree", s.cfg.URL)
	}
	s.addr, s.path = addr, path
	if tlsOn {
		// The user's server has its own certificate: trust what the system trusts, and
		// send the URL's host name.
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		s.roots = pool
		u, _ := url.Parse(s.cfg.URL)
		s.serverName = u.Hostname()
	}
	s.ident = Identity{Kind: URL, Name: "url", URL: s.cfg.URL}
	return nil
}

// certFiles are the PEM files of the run's certificate.
type certFiles struct{ cert, key, combined string }

func (s *Server) startProgram(ctx context.Context) error {
	tmp, err := s.makeWorkDir()
	if err != nil {
		return err
	}
	var files certFiles
	if s.cfg.TLS {
		if files, err = s.writeCertificate(); err != nil {
			return err
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.addr, s.port = net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port
	argv, configFile, logName, err := s.commandLine(ctx, tmp, port, files)
	if err != nil {
		return err
	}
	s.ident.URL = map[bool]string{false: "http://", true: "https://"}[s.cfg.TLS] + s.addr + "/"
	logPath, err := s.openLogs(tmp, configFile, logName)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = tmp
	cmd.Env = childenv.For(s.cfg.Env, nil)
	cmd.Stdout, cmd.Stderr = s.logFile, s.logFile
	group, err := proc.Start(cmd, tmp)
	if err != nil {
		return fmt.Errorf("starting %s: %w", argv[0], err)
	}
	s.cmd, s.group = cmd, group
	s.exited = make(chan struct{})
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	return s.waitReady(ctx, logPath)
}

// makeWorkDir makes the program's own directory (s.tmp), as an absolute path: the program
// runs in it, and nginx resolves relative paths against its prefix, not against kalab's
// directory, so every path handed to the program is absolute.
func (s *Server) makeWorkDir() (string, error) {
	tmp, err := os.MkdirTemp("", "kalab-"+string(s.cfg.Kind)+"-")
	if err != nil {
		return "", err
	}
	s.tmp = tmp
	if tmp, err = filepath.Abs(tmp); err != nil {
		return "", err
	}
	s.tmp = tmp
	// Readable by the unprivileged workers a server started as root runs (nginx's).
	return tmp, os.Chmod(tmp, 0o755)
}

// commandLine builds the program's argv (a shell for a command, else the adapter's program
// and arguments), sets the server's identity, and names its config file (if any) and log.
func (s *Server) commandLine(ctx context.Context, tmp string, port int, files certFiles) (argv []string, configFile, logName string, err error) {
	if s.cfg.Kind == Command {
		command := strings.NewReplacer("{port}", strconv.Itoa(port), "{cert}", files.cert, "{key}", files.key).Replace(s.cfg.Command)
		s.ident = Identity{Kind: Command, Name: commandName(s.cfg.Command), Program: command}
		return []string{"/bin/sh", "-c", command}, "", "command.log", nil
	}
	abs := s.cfg
	if abs.LogDir != "" {
		if abs.LogDir, err = filepath.Abs(abs.LogDir); err != nil {
			return nil, "", "", err
		}
	}
	ad := adapters[s.cfg.Kind]
	prog := s.cfg.Program
	if prog == "" {
		prog = ad.program()
	}
	path, err := lookPathAbs(prog)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %s is not installed (%v); install it: apt-get install %s", ErrMissing, prog, err, debianPackage(prog))
	}
	abs.version = programVersion(ctx, path, ad, s.cfg.Env)
	args, cf, err := ad.prepare(abs, tmp, port, files)
	if err != nil {
		return nil, "", "", err
	}
	s.ident = Identity{Kind: s.cfg.Kind, Name: string(s.cfg.Kind), Program: path, Version: abs.version}
	return append([]string{path}, args...), cf, string(s.cfg.Kind) + ".log", nil
}

// openLogs opens the program's output log (in the log directory, else in tmp) and lists the
// files kept with the run: the log, a copy of the config file, nginx's own logs.
func (s *Server) openLogs(tmp, configFile, logName string) (string, error) {
	logDir := s.cfg.LogDir
	if logDir == "" {
		logDir = tmp
	}
	if configFile != "" && s.cfg.LogDir != "" {
		if b, err := os.ReadFile(configFile); err == nil {
			keep := filepath.Join(s.cfg.LogDir, filepath.Base(configFile))
			if os.WriteFile(keep, b, atomicfile.Mode) == nil {
				s.logs = append(s.logs, keep)
			}
		}
	}
	logPath := filepath.Join(logDir, logName)
	var err error
	if s.logFile, err = os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, atomicfile.Mode); err != nil {
		return "", err
	}
	s.logs = append(s.logs, logPath)
	if s.cfg.Kind == Nginx && s.cfg.LogDir != "" {
		s.logs = append(s.logs, filepath.Join(logDir, "error.log"), filepath.Join(logDir, "access.log"))
	}
	return logPath, nil
}

// lookPathAbs finds prog as exec.LookPath does and makes the result absolute, since the
// program starts in its own directory.
func lookPathAbs(prog string) (string, error) {
	path, err := exec.LookPath(prog)
	if err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// waitReady polls the port until the server accepts a connection, then checks that the
// listening socket is the started program's (see owned).
func (s *Server) waitReady(ctx context.Context, logPath string) error {
	deadline := time.Now().Add(s.cfg.StartTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			_ = c.Close()
			return s.owned()
		}
		select {
		case <-s.exited:
			if err := s.owned(); err != nil {
				return fmt.Errorf("exited before accepting connections (%v): %w; %s", s.waitErr, err, tail(logPath))
			}
			return fmt.Errorf("exited before accepting connections (%v): %s", s.waitErr, tail(logPath))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections on %s after %v: %s", s.addr, s.cfg.StartTimeout, tail(logPath))
		}
	}
}

// owned checks that the socket listening on the server's port belongs to the program's
// process group. freePort's port can be taken by another process before the program binds
// it; the program then fails to bind while the other process answers the readiness check
// and the probe, and the run would be recorded as the program's. Where the system does not
// say who holds a socket (not Linux), readiness is the connection alone.
func (s *Server) owned() error {
	err := proc.CheckOwner(s.port, s.group.Pid())
	if errors.Is(err, proc.ErrUnsupported) {
		return nil
	}
	s.ident.Verified = err == nil
	return err
}

// tail returns the end of a log file for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return "its log is empty"
	}
	b = bytes.TrimSpace(b)
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return "its log ends: " + string(b)
}

func (s *Server) writeCertificate() (certFiles, error) {
	cert, pool, err := server.NewCertificate()
	if err != nil {
		return certFiles{}, err
	}
	s.roots = pool
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return certFiles{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	f := certFiles{cert: filepath.Join(s.tmp, "cert.pem"), key: filepath.Join(s.tmp, "key.pem"), combined: filepath.Join(s.tmp, "combined.pem")}
	for _, w := range []struct {
		path string
		data []byte
	}{{f.cert, certPEM}, {f.key, keyPEM}, {f.combined, append(append([]byte(nil), certPEM...), keyPEM...)}} {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return certFiles{}, err
		}
	}
	return f, nil
}

// freePort picks a free loopback port for a server kalab starts. Where the kernel says
// which ports it hands out by itself (Linux's ip_local_port_range), the port comes from
// below that range, checked free by binding it: a port the kernel handed out for ":0" can
// go to a connection's ephemeral end before the server binds it (at load 4 another socket
// of the test process took one: "held by pid ... (runner.test)"). Elsewhere it asks the
// kernel for one. Another process could still bind it first; waitReady then finds the port
// held by a process outside the server's group and names it (owned).
var freePort = func() (int, error) {
	if low := ephemeralLow(); low > 20000 {
		for range 32 {
			port := 10000 + rand.IntN(low-10000)
			if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				_ = ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }() // only its port was wanted
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, 0 when unknown; read
// once per process, not for every server started.
var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
})

func commandName(command string) string {
	f := strings.Fields(command)
	if len(f) == 0 {
		return "command"
	}
	return filepath.Base(f[0])
}

func programVersion(ctx context.Context, path string, ad adapter, env []string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, ad.versionArgs()...)
	cmd.Env = childenv.For(env, nil)
	out, _ := cmd.CombinedOutput()
	return ad.version(string(out))
}

// probe sends one request straight to the server (not through the proxy) and records the
// Server header it answers with. It dials only an address that passes the loopback check
// (--allow-remote: the URL's), through no proxy, and never follows a redirect: one is
// reported as an error naming where it pointed.
func (s *Server) probe(ctx context.Context) error {
	dialer := &net.Dialer{}
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			checked, err := loopback.Check(addr, s.cfg.AllowRemote)
			if err != nil {
				return nil, err
			}
			return dialer.DialContext(ctx, network, checked)
		}}
	var protos http.Protocols
	switch {
	case s.cfg.HTTP2 && !s.cfg.TLS:
		protos.SetUnencryptedHTTP2(true)
	case s.cfg.HTTP2:
		protos.SetHTTP1(true)
		protos.SetHTTP2(true)
	default:
		protos.SetHTTP1(true)
	}
	tr.Protocols = &protos
	if s.cfg.TLS {
		tr.TLSClientConfig = &tls.Config{RootCAs: s.roots, ServerName: s.serverName}
	}
	defer tr.CloseIdleConnections()
	scheme := map[bool]string{false: "http", true: "https"}[s.cfg.TLS]
	path := s.path
	if path == "" {
		path = "/"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+s.addr+path, nil)
	if err != nil {
		return err
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := (&http.Client{Transport: tr, CheckRedirect: noRedirect}).Do(req)
	if err != nil {
		return fmt.Errorf("probe request to %s: %w", s.addr, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<20))
	_ = resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
		return fmt.Errorf("the probe request to %s was answered %s with a redirect to %q; kalab follows no redirect: give the URL the server answers itself", s.addr, resp.Status, loc)
	}
	s.ident.ServerHeader = resp.Header.Get("Server")
	if msg := answerMismatch(s.cfg.Kind, resp.Header); msg != "" {
		return &IdentityError{Kind: s.cfg.Kind, Addr: s.addr, Msg: msg}
	}
	if s.ident.Kind == URL || s.ident.Kind == Command {
		if name, version, ok := strings.Cut(s.ident.ServerHeader, "/"); ok {
			s.ident.Name, s.ident.Version = name, strings.Fields(version + " ")[0]
		} else if s.ident.ServerHeader != "" {
			s.ident.Name = s.ident.ServerHeader
		}
	}
	return nil
}

// plainText is the Content-Type kalab configures the Node and HAProxy servers to answer with.
const plainText = "text/plain; charset=utf-8"

// answerMismatch says how the probe's answer differs from the one the program of kind gives,
// "" when it does not. The socket owner check (owned) cannot tell the program from another
// in its process group (a wrapper's helper, a script named nginx) holding the port; the
// answer can. nginx names itself in its Server header. Node's http module and HAProxy's
// "http-request return" send no Server header, and kalab configures both to answer with
// plainText. A command and a URL can be any server: nothing is checked, and the Server
// header names it in the run record.
func answerMismatch(kind Kind, h http.Header) string {
	server, ctype := h.Get("Server"), h.Get("Content-Type")
	answered := "it answered with no Server header"
	if server != "" {
		answered = fmt.Sprintf("it answered with %q", "Server: "+server)
	}
	switch kind {
	case Nginx:
		if !strings.HasPrefix(server, "nginx") {
			return answered + `; nginx's answer has a Server header starting with "nginx"`
		}
	case Node, HAProxy:
		if server != "" {
			return fmt.Sprintf("%s; %s's answer has no Server header", answered, kind)
		}
		if ctype != plainText {
			return fmt.Sprintf("it answered with %q; kalab's %s server answers %q", "Content-Type: "+ctype, kind, plainText)
		}
	}
	return ""
}

// Addr is the host:port the proxy forwards to.
func (s *Server) Addr() string { return s.addr }

// Path is the request path (and query) a URL names; empty for other kinds.
func (s *Server) Path() string { return s.path }

// RootCAs trusts the server's certificate (the run's own, or the system's for a URL).
func (s *Server) RootCAs() *x509.CertPool { return s.roots }

// ServerName is the TLS server name to send.
func (s *Server) ServerName() string { return s.serverName }

// Identity names the server.
func (s *Server) Identity() Identity { return s.ident }

// ProcessGroup is the program's process group id, for measuring what its threads waited
// for a core (lag.GroupWait); 0 for a URL, which kalab did not start.
func (s *Server) ProcessGroup() int {
	if s.group == nil {
		return 0
	}
	return s.group.Pid()
}

// Logs lists the files kept in LogDir: the generated configuration and the logs.
func (s *Server) Logs() []string { return s.logs }

// stopGrace is how long a server gets to exit after SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// Close stops the program (SIGTERM to its process group, SIGKILL after stopGrace) and
// removes its temporary files; the logs in LogDir stay. A URL server is left alone.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stopEvents()
		if s.group != nil {
			s.group.Terminate()
			select {
			case <-s.exited:
			case <-time.After(stopGrace):
				s.group.Kill()
				<-s.exited
				s.closeErr = fmt.Errorf("%s: did not stop within %v of SIGTERM; killed", s.cfg.Kind, stopGrace)
			}
			// Children that outlived the leader (a shell's server) go with the group.
			s.group.Release()
		}
		if s.logFile != nil {
			_ = s.logFile.Close()
		}
		if s.tmp != "" {
			_ = os.RemoveAll(s.tmp)
		}
	})
	return s.closeErr
}
