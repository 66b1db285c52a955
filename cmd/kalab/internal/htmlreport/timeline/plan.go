package timeline

import (
	"encoding/json"
	"strings"
	"time"
)

// Plan is what the report reads from a run's resolved parameters; every field is
// optional, so records from another kalab version still render.
type Plan struct {
	RTTMs      float64 // network round trip, scenario time
	Burst      int     // requests per burst; 0 = no bursts
	PauseMinMs float64 // shortest pause between bursts
	// HTTP3: the run spoke HTTP/3 (server.http "3"): QUIC over UDP, which sends no FIN
	// and no TCP reset, so the timeline draws no FIN's arrival.
	HTTP3 bool
}

// ReadPlan reads a run record's params; a missing or odd field leaves its zero value.
func ReadPlan(params json.RawMessage) Plan {
	var p struct {
		Network struct {
			RTT string `json:"rtt"`
		} `json:"network"`
		Load struct {
			Burst int    `json:"burst"`
			Pause string `json:"pause"`
		} `json:"load"`
		Server struct {
			HTTP string `json:"http"`
		} `json:"server"`
	}
	_ = json.Unmarshal(params, &p) // a missing or odd field leaves its zero value
	out := Plan{RTTMs: durMs(p.Network.RTT), Burst: p.Load.Burst, HTTP3: p.Server.HTTP == "3"}
	lo, _, _ := strings.Cut(p.Load.Pause, "..")
	out.PauseMinMs = durMs(lo)
	return out
}

func durMs(s string) float64 {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0
	}
	return float64(d) / float64(time.Millisecond)
}
