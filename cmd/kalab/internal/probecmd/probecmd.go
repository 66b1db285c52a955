// Package probecmd is kalab probe: measure what a live server does with idle and reused
// connections (cmd/kalab/internal/probe), print it, and write it down as a scenario.
package probecmd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/flaghint"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/probe"
	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/scenario/presets"
)

// Exit codes, as the rest of the command line (docs/running.md).
const (
	exitOK          = 0
	exitInvalid     = 2
	exitEngine      = 3
	exitInterrupted = 130
)

// Synopsis is the command's line in kalab's usage.
const Synopsis = "probe URL [--write FILE] [--client PRESET] [--max-requests N] [--budget D] [--allow-remote]"

type flags struct {
	opt    probe.Options
	write  string
	client string
	ca     string
}

func flagSet(stdout, stderr io.Writer) (*pflag.FlagSet, *flags) {
	f := &flags{}
	fs := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.write, "write", "", "write a scenario that models the measured server (kalab run it; kalab sweep it)")
	fs.StringVar(&f.client, "client", "go-default", "the client preset the written scenario models")
	fs.IntVar(&f.opt.MaxRequests, "max-requests", probe.DefaultMaxRequests, "most requests sent on the one connection that counts requests per connection")
	fs.IntVar(&f.opt.MaxConns, "max-conns", probe.DefaultMaxConns, "most connections opened in all")
	fs.DurationVar(&f.opt.Budget, "budget", probe.DefaultBudget, "most wall time for the whole probe")
	fs.DurationVar(&f.opt.MaxIdle, "max-idle", probe.DefaultMaxIdle, "longest idle gap tried: a server still open after it is reported as above it")
	fs.DurationVar(&f.opt.Resolution, "resolution", probe.DefaultResolution, "width at which the bisection of a silent drop stops")
	fs.IntVar(&f.opt.Parallel, "parallel", probe.DefaultParallel, "connections held idle at once in each bisection round")
	fs.DurationVar(&f.opt.RequestTimeout, "request-timeout", probe.DefaultRequestTimeout, "how long a response may take before the request counts as unanswered")
	fs.StringVar(&f.opt.Method, "method", "GET", "GET or HEAD")
	fs.StringVar(&f.ca, "ca", "", "a PEM file of certificates to trust for https (default: the system's)")
	fs.BoolVar(&f.opt.AllowRemote, "allow-remote", false, "probe a host outside loopback (as a scenario's server.url)")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: kalab %s\n\n"+
			"Measures, on the real clock, when the server at URL closes an idle connection and how\n"+
			"(FIN, RST, or a silent drop on the path), its Keep-Alive hint, the requests it serves on\n"+
			"one connection, HTTP/2 by ALPN, TLS resumption and the round trip. GET or HEAD of URL\n"+
			"only, no redirect followed; loopback unless --allow-remote. A value not found within the\n"+
			"budget is reported as above it or not seen. Exit 0 measured, 2 bad input, 3 the server\n"+
			"could not be measured (or --write had no close to model), 130 interrupted.\n\nFlags:\n%s", Synopsis, fs.FlagUsages())
	}
	return fs, f
}

// Main runs kalab probe and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs, f := flagSet(stdout, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "kalab probe: %v%s\nRun 'kalab probe --help' for its flags.\n", err, flaghint.For(fs, err))
		return exitInvalid
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "kalab probe: want one URL (got %d arguments)\n", fs.NArg())
		return exitInvalid
	}
	f.opt.URL = fs.Arg(0)
	if err := f.check(); err != nil {
		fmt.Fprintf(stderr, "kalab probe: %v\n", err)
		return exitInvalid
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := probe.Run(ctx, f.opt)
	switch {
	case errors.Is(err, probe.ErrInput):
		fmt.Fprintf(stderr, "kalab probe: %v\n", err)
		return exitInvalid
	case err != nil:
		fmt.Fprintf(stderr, "kalab probe: %v\n", err)
		return exitEngine
	}
	res.Write(stdout)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "kalab probe: interrupted: the figures above are what was measured before")
		return exitInterrupted
	}
	if f.write != "" {
		return f.writeScenario(res, stdout, stderr)
	}
	return exitOK
}

// check validates the flags before anything is sent.
func (f *flags) check() error {
	if presets.Client[f.client] == nil {
		hint := ""
		if c := check.Closest(f.client, presets.Names(presets.Client)); c != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", c)
		}
		return fmt.Errorf("--client %q: no such client preset%s (kalab help presets)", f.client, hint)
	}
	for name, v := range map[string]int64{"--max-requests": int64(f.opt.MaxRequests), "--max-conns": int64(f.opt.MaxConns),
		"--parallel": int64(f.opt.Parallel), "--budget": int64(f.opt.Budget), "--max-idle": int64(f.opt.MaxIdle),
		"--resolution": int64(f.opt.Resolution), "--request-timeout": int64(f.opt.RequestTimeout)} {
		if v <= 0 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	if f.opt.MaxConns < f.opt.Parallel+2 {
		return fmt.Errorf("--max-conns %d: the probe needs at least --parallel + 2 (%d)", f.opt.MaxConns, f.opt.Parallel+2)
	}
	f.opt.Method = strings.ToUpper(f.opt.Method)
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return fmt.Errorf("--ca: %v", err)
		}
		f.opt.RootCAs = x509.NewCertPool()
		if !f.opt.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca %s: no PEM certificate in it", f.ca)
		}
	}
	return nil
}

// writeScenario writes the model whole (a temporary file renamed over the target).
func (f *flags) writeScenario(res *probe.Result, stdout, stderr io.Writer) int {
	var b strings.Builder
	if err := res.WriteScenario(&b, f.client); err != nil {
		fmt.Fprintf(stderr, "kalab probe: --write %s: %v\n", f.write, err)
		return exitEngine
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.write), ".probe-*.yaml")
	if err == nil {
		_, err = tmp.WriteString(b.String())
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), f.write)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "kalab probe: --write: %v\n", err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "\nwrote %s: kalab run %s runs the model on the virtual clock\n", f.write, f.write)
	return exitOK
}
