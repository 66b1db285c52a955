//go:build ignore

// kalab adapter go-http: one net/http.Client over a Transport cloned from
// http.DefaultTransport, driving the plan of a run (kalab's exec protocol v1,
// docs/real-programs.md "Bring your own client"). Standard library only: kalab builds it
// with the go command on PATH (go build go-http.go; the ignore constraint keeps it out of
// kalab's own packages), with the toolchain client.exec's version names (Go 1.21 or
// later), and runs the program it built.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type plan struct {
	URL         string            `json:"url"`
	CAFile      string            `json:"ca_file"`
	Method      string            `json:"method"`
	Headers     map[string]string `json:"headers"`
	RequestHdr  string            `json:"request_header"`
	Requests    int               `json:"requests"`
	Concurrency int               `json:"concurrency"`
	Burst       int               `json:"burst"`
	PausesMs    []float64         `json:"pauses_ms"`
	Client      map[string]any    `json:"client"`
}

func main() {
	p, err := readPlan(os.Getenv("KALAB_PLAN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-http:", err)
		os.Exit(2)
	}
	c, err := newClient(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-http:", err)
		os.Exit(2)
	}
	run(p, c)
	c.CloseIdleConnections()
}

func readPlan(path string) (*plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return &p, nil
}

// newClient changes only what the scenario set; everything else is Go's own default
// (DefaultTransport: MaxIdleConnsPerHost 2, IdleConnTimeout 90 s, ForceAttemptHTTP2, no
// ClientSessionCache).
func newClient(p *plan) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // kalab's target is loopback, which ProxyFromEnvironment never proxies anyway
	tc := &tls.Config{}
	if p.CAFile != "" {
		pem, err := os.ReadFile(p.CAFile)
		if err != nil {
			return nil, err
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %s", p.CAFile)
		}
		tc.RootCAs = roots
	}
	cl := &http.Client{Transport: tr}
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse } // kalab's clients follow no redirect
	for k, v := range p.Client {
		switch k {
		case "keepalive":
			tr.DisableKeepAlives = v == false
		case "idle_timeout_ms":
			tr.IdleConnTimeout = ms(v) // 0: no limit, as kalab's none
		case "max_idle":
			n := num(v)
			if n == 0 {
				n = 1 << 30 // kalab's 0 is unlimited; the Transport's 0 is 2
			}
			tr.MaxIdleConnsPerHost = n
		case "max_conns":
			tr.MaxConnsPerHost = num(v)
		case "session_resumption":
			if v == true {
				tc.ClientSessionCache = tls.NewLRUClientSessionCache(0)
			}
		case "timeout_ms":
			cl.Timeout = ms(v)
		case "http2":
			if err := setProtocols(tr, v); err != nil {
				return nil, err
			}
		}
	}
	tr.TLSClientConfig = tc
	return cl, nil
}

// setProtocols sets Transport.Protocols for kalab's http2: HTTP/1.1 always, HTTP/2 over
// TLS for tls, and h2c too for always. The field came in Go 1.24; reflection keeps the
// adapter building with an older toolchain (client.exec's version), which refuses http2.
func setProtocols(tr *http.Transport, v any) error {
	f := reflect.ValueOf(tr).Elem().FieldByName("Protocols")
	if !f.IsValid() {
		return fmt.Errorf("client.http2 needs Transport.Protocols (Go 1.24 or later); this is %s", runtime.Version())
	}
	pr := reflect.New(f.Type().Elem())
	set := func(name string) { pr.MethodByName(name).Call([]reflect.Value{reflect.ValueOf(true)}) }
	set("SetHTTP1")
	switch v {
	case "tls":
		set("SetHTTP2")
	case "always":
		set("SetHTTP2")
		set("SetUnencryptedHTTP2")
	}
	f.Set(pr)
	return nil
}

func ms(v any) time.Duration {
	f, _ := v.(float64)
	return time.Duration(f * float64(time.Millisecond))
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

var out = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func emit(line map[string]any) {
	out.Lock()
	defer out.Unlock()
	_ = out.enc.Encode(line)
}

func epochMs(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// one runs request i; planned is when the schedule meant it to start (the end of the pause
// before it, or of the request before it on the same worker). It returns when it ended.
func one(p *plan, c *http.Client, i int, planned time.Time) time.Time {
	line := map[string]any{"index": i, "planned": epochMs(planned)}
	start := time.Now()
	line["start"] = epochMs(start)
	req, err := http.NewRequestWithContext(context.Background(), p.Method, p.URL, nil)
	if err == nil {
		for k, v := range p.Headers {
			if http.CanonicalHeaderKey(k) == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		req.Header.Set(p.RequestHdr, strconv.Itoa(i))
		var resp *http.Response
		resp, err = c.Do(req)
		if err == nil {
			n, rerr := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			line["status"], line["bytes"] = resp.StatusCode, n
			line["conn"], line["conn_request"] = resp.Header.Get("Kalab-Conn"), resp.Header.Get("Kalab-Conn-Request")
			err = rerr
		}
	}
	if err != nil {
		if _, ok := line["status"]; !ok {
			line["status"] = 0
		}
		line["error"], line["code"] = err.Error(), code(err)
	}
	end := time.Now()
	line["end"] = epochMs(end)
	emit(line)
	return end
}

// code names err's cause the way kalab's error table reads it (engine/execclient/classify.go).
func code(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.Is(err, syscall.EPIPE):
		return "EPIPE"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ECONNREFUSED"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(err.Error(), "server closed idle connection"): // transport.go errServerClosedIdle
		return "EOF"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "ETIMEDOUT"
	}
	var cv *tls.CertificateVerificationError
	var ae tls.AlertError
	var re *tls.RecordHeaderError
	if errors.As(err, &cv) || errors.As(err, &ae) || errors.As(err, &re) {
		return "TLS"
	}
	return ""
}

// run is the closed schedule: bursts of p.Burst requests (all of them when 0), up to
// p.Concurrency in flight; after a burst's last response, the next pause.
func run(p *plan, c *http.Client) {
	burst := p.Burst
	if burst <= 0 {
		burst = p.Requests
	}
	conc := max(p.Concurrency, 1)
	for b, next := 0, 0; next < p.Requests; b++ {
		ready := time.Now()
		if b > 0 {
			pause := time.Duration(p.PausesMs[b-1] * float64(time.Millisecond))
			ready = ready.Add(pause)
			time.Sleep(pause)
		}
		end := min(next+burst, p.Requests)
		var mu sync.Mutex
		var wg sync.WaitGroup
		// The workers are counted before any starts: each takes indexes from next.
		workers := min(conc, end-next)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := ready; ; {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= end {
						return
					}
					r = one(p, c, i, r)
				}
			}()
		}
		wg.Wait()
		next = end
	}
}
