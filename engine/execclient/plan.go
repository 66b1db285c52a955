package execclient

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ProtocolVersion is the version of the plan file and the lines a client writes.
const ProtocolVersion = 1

// RequestHeader carries each request's index, so that the server can count a request
// the client sent more than once (a hidden re-send).
const RequestHeader = "Kalab-Request"

// Plan is the JSON file a client reads (KALAB_PLAN): everything about the requests to
// make. Times are milliseconds of real time.
type Plan struct {
	Version     int               `json:"version"`
	URL         string            `json:"url"`     // every request's URL, path included
	CAFile      string            `json:"ca_file"` // PEM file to trust; "" for plain HTTP
	Method      string            `json:"method"`
	Headers     map[string]string `json:"headers"`        // extra request headers
	RequestHdr  string            `json:"request_header"` // send the request's index in this header
	Requests    int               `json:"requests"`
	Concurrency int               `json:"concurrency"` // in flight at once within a burst, >= 1
	Burst       int               `json:"burst"`       // requests per burst; 0 = all in one
	PausesMs    []float64         `json:"pauses_ms"`   // pause k follows burst k's last response
	// Client holds the client fields the scenario set, under their scenario names, with
	// durations as <name>_ms in milliseconds; keepalive is always present.
	Client map[string]any `json:"client"`
}

// Pauses sets PausesMs from durations.
func (p *Plan) Pauses(d []time.Duration) {
	p.PausesMs = make([]float64, len(d))
	for i, v := range d {
		p.PausesMs[i] = float64(v) / float64(time.Millisecond)
	}
}

// write puts the plan, its headers file and the CA into dir and returns the environment
// a client gets: KALAB_PLAN, KALAB_URL, KALAB_CA_FILE and the plan's scalars, for
// programs that would rather not parse JSON (a shell loop).
func (p *Plan) write(dir string, caPEM []byte) ([]string, error) {
	if len(caPEM) > 0 {
		p.CAFile = filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(p.CAFile, caPEM, 0o644); err != nil {
			return nil, err
		}
	}
	if p.Headers == nil {
		p.Headers = map[string]string{}
	}
	if p.PausesMs == nil {
		p.PausesMs = []float64{}
	}
	p.Version, p.RequestHdr = ProtocolVersion, RequestHeader
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	planFile := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planFile, b, 0o644); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(p.Headers))
	for k := range p.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var hdr strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&hdr, "%s: %s\n", k, p.Headers[k])
	}
	hdrFile := filepath.Join(dir, "headers.txt")
	if err := os.WriteFile(hdrFile, []byte(hdr.String()), 0o644); err != nil {
		return nil, err
	}
	pauses := make([]string, len(p.PausesMs))
	for i, ms := range p.PausesMs {
		pauses[i] = strconv.FormatFloat(ms/1000, 'f', 6, 64)
	}
	env := []string{
		"KALAB_PLAN=" + planFile,
		"KALAB_URL=" + p.URL,
		"KALAB_CA_FILE=" + p.CAFile,
		"KALAB_METHOD=" + p.Method,
		"KALAB_HEADERS_FILE=" + hdrFile,
		"KALAB_REQUEST_HEADER=" + RequestHeader,
		"KALAB_REQUESTS=" + strconv.Itoa(p.Requests),
		"KALAB_CONCURRENCY=" + strconv.Itoa(p.Concurrency),
		"KALAB_BURST=" + strconv.Itoa(p.Burst),
		"KALAB_PAUSES_S=" + strings.Join(pauses, " "),
	}
	ck := make([]string, 0, len(p.Client))
	for k := range p.Client {
		ck = append(ck, k)
	}
	sort.Strings(ck)
	for _, k := range ck {
		var v string
		switch x := p.Client[k].(type) {
		case string:
			v = x
		case bool:
			v = strconv.FormatBool(x)
		case int:
			v = strconv.Itoa(x)
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			continue // lists and maps are in the plan file only
		}
		env = append(env, "KALAB_CLIENT_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))+"="+v)
	}
	return env, nil
}
