package configure

import (
	"testing"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

// Every client preset, resolved by the loader and mapped by the runner, is a Config the
// client accepts, over HTTP/1.1 and HTTP/2.
func TestEveryClientPresetMapsToAValidConfig(t *testing.T) {
	t.Parallel()
	for _, name := range scenario.PresetNames(scenario.ClientPresets) {
		for _, http := range []string{"1.1", "2"} {
			p := plan(t, "name: x\nserver: {http: \""+http+"\"}\nclient: {preset: "+name+"}\n")
			st := p.Scenarios[0].Runs[0].Settings
			cfg := Client(st, 1, "127.0.0.1:1", nil, "")
			c, err := client.New(cfg)
			if err != nil {
				t.Errorf("%s over HTTP/%s: %v", name, http, err)
				continue
			}
			c.Close()
		}
	}
}

func plan(t *testing.T, src string) *scenario.Plan { return plantest.Load(t, src) }
