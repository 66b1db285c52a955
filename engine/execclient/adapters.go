package execclient

import (
	"embed"

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
