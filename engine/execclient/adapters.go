package execclient

import (
	"bytes"
	"context"
	"embed"
	"os/exec"
	"slices"

	"github.com/kalab-dev/kalab/engine/adapter"
)

//go:embed adapters
var adapterFiles embed.FS

// Adapter is a bundled client program from the catalogue (engine/adapter), with the
// script this package runs it by.
type Adapter struct {
	adapter.Adapter
	probe []string // Runtime's arguments that print its versions (see identify)
}

// Fixed is a value a runtime cannot change, and why.
type Fixed = adapter.Fixed

// Ignored are client fields that describe kalab's own clients; an exec run ignores them.
var Ignored = adapter.Ignored

var adapters = func() map[string]*Adapter {
	out := map[string]*Adapter{}
	for _, name := range adapter.Names() {
		a, _ := adapter.Lookup(name)
		out[name] = &Adapter{Adapter: *a, probe: a.Probe}
	}
	return out
}()

// Lookup returns the bundled adapter named name.
func Lookup(name string) (*Adapter, bool) {
	a, ok := adapters[name]
	return a, ok
}

// Names lists the bundled adapters, sorted.
func Names() []string { return adapter.Names() }

func (a *Adapter) script() ([]byte, error) {
	return adapterFiles.ReadFile("adapters/" + a.Script)
}

// probeCommand is the command that asks the runtime at path for its versions: Probe's
// arguments, then for a ProbeScript adapter the release client.exec.version asks for (the
// script itself on standard input), so a version that is not here fails the probe.
func (a *Adapter) probeCommand(ctx context.Context, path string, version string) (*exec.Cmd, error) {
	args := slices.Clone(a.probe)
	if !a.ProbeScript {
		return exec.CommandContext(ctx, path, args...), nil
	}
	src, err := a.script()
	if err != nil {
		return nil, err
	}
	if version != "" {
		args = append(args, version)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = bytes.NewReader(src)
	return cmd, nil
}
