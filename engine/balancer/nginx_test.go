package balancer

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// startNginx runs a real nginx as a reverse proxy to backend with an upstream keepalive
// pool and its default proxy_next_upstream, on a loopback port; it returns the address.
func startNginx(t *testing.T, bin, backend string) string {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream backend {
    server %[2]s;
    keepalive 16;
  }
  server {
    listen %[3]s;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, dir, backend, addr)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", cf, "-e", filepath.Join(dir, "error.log"))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting nginx: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx output: %s\nerror.log:\n%s", out, log)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not listen on %s: %s\n%s", addr, out, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The nginx-proxy policy is nginx's own: a backend connection from the keepalive cache
// that dies under a request is re-sent for GET and PUT, answered 502 for POST. The same
// scripted backend faces real nginx 1.22 and the embedded balancer with the preset's
// policy; both must give the same answers and open the same backend connections.
func TestNginxPolicyMatchesRealNginx(t *testing.T) {
	t.Parallel()
	bin := findProgram(t, "nginx")
	for _, method := range []string{"GET", "PUT", "POST"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			outcome := func(addr string, be *backend) (int, int64) {
				c := modelClient(t, addr, method)
				if ev := c.Do(context.Background(), 0); ev.Status != 200 {
					t.Fatalf("first request: %+v", ev)
				}
				ev := c.Do(context.Background(), 1)
				if !ev.OK() {
					t.Fatalf("second request failed at the client: %s", ev.Error)
				}
				return ev.Status, be.conns.Load()
			}
			closeSecond := func(n, _ int64) bool { return n == 2 }

			realBE := startBackend(t, closeSecond)
			realStatus, realConns := outcome(startNginx(t, bin, realBE.ln.Addr().String()), realBE)

			ownBE := startBackend(t, closeSecond)
			own := startBalancer(t, Config{OnError: PolicyRetryIdempotent, Retries: 16,
				Backend: client.Config{Addr: ownBE.ln.Addr().String(), KeepAlive: true, LivenessCheck: true, MaxIdle: 16, Timeout: 5 * time.Second}})
			ownStatus, ownConns := outcome(own.Addr(), ownBE)

			want := map[string]int{"GET": 200, "PUT": 200, "POST": 502}[method]
			if realStatus != want {
				t.Errorf("real nginx answered %d to a %s whose cached backend connection died; the preset assumes %d", realStatus, method, want)
			}
			if ownStatus != realStatus || ownConns != realConns {
				t.Errorf("%s: embedded balancer %d with %d backend connections, real nginx %d with %d", method, ownStatus, ownConns, realStatus, realConns)
			}
		})
	}
}

// A cached connection whose FIN already arrived is not used: nginx's keepalive module
// closes it on its read event, which the preset's liveness_check models. Even a POST then
// goes out on a new connection without an error.
func TestNginxDropsClosedCachedConnection(t *testing.T) {
	t.Parallel()
	bin := findProgram(t, "nginx")
	const idle = 100 * time.Millisecond
	outcome := func(addr string, be *backend) (int, int64) {
		c := modelClient(t, addr, "POST")
		if ev := c.Do(context.Background(), 0); ev.Status != 200 {
			t.Fatalf("first request: %+v", ev)
		}
		time.Sleep(4 * idle)
		ev := c.Do(context.Background(), 1)
		if !ev.OK() {
			t.Fatalf("second request failed at the client: %s", ev.Error)
		}
		return ev.Status, be.conns.Load()
	}
	realBE := startIdleBackend(t, nil, idle)
	realStatus, realConns := outcome(startNginx(t, bin, realBE.ln.Addr().String()), realBE)

	ownBE := startIdleBackend(t, nil, idle)
	own := startBalancer(t, Config{OnError: PolicyRetryIdempotent, Retries: 16,
		Backend: client.Config{Addr: ownBE.ln.Addr().String(), KeepAlive: true, LivenessCheck: true, MaxIdle: 16, Timeout: 5 * time.Second}})
	ownStatus, ownConns := outcome(own.Addr(), ownBE)
	if realStatus != 200 || realConns != 2 {
		t.Errorf("real nginx: %d with %d backend connections; the preset assumes 200 on a new connection", realStatus, realConns)
	}
	if ownStatus != realStatus || ownConns != realConns {
		t.Errorf("embedded balancer %d with %d backend connections, real nginx %d with %d", ownStatus, ownConns, realStatus, realConns)
	}
}
