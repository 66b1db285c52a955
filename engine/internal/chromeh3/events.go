package chromeh3

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// seqParam is the query parameter that makes each of the driver's requests unique (no cache
// answers it) and names it in the events.
const seqParam = "kalab-seq"

// withSeq returns path with seqParam=seq added to its query.
func withSeq(path string, seq int) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + seqParam + "=" + strconv.Itoa(seq)
}

// seqOf returns the sequence number a request URL carries, or "".
func seqOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Query().Get(seqParam)
}

// response is what Network.responseReceived says of a response's connection.
type response struct {
	URL              string  `json:"url"`
	Status           int     `json:"status"`
	Protocol         string  `json:"protocol"`
	ConnectionReused bool    `json:"connectionReused"`
	ConnectionID     float64 `json:"connectionId"` // a number in the protocol
	RemotePort       int     `json:"remotePort"`
}

// events keeps what the page's Network and Page domains reported: each response and each
// failure of a request the driver made, by its sequence number (its URL's seqParam), and
// whether the page has loaded. Other requests (a favicon) are not kept.
type events struct {
	mu        sync.Mutex
	seqs      map[string]string // request id -> sequence number
	responses map[string]response
	failures  map[string]string // sequence number -> Chromium's error text
	loaded    bool
	changed   chan struct{} // closed and replaced whenever something is recorded
}

func newEvents() *events {
	return &events{seqs: map[string]string{}, responses: map[string]response{}, failures: map[string]string{}, changed: make(chan struct{})}
}

// record takes one DevTools event (called from the pipe's reading goroutine).
func (e *events) record(method, _ string, params json.RawMessage) {
	var p struct {
		RequestID string               `json:"requestId"`
		Request   struct{ URL string } `json:"request"`
		Response  response             `json:"response"`
		ErrorText string               `json:"errorText"`
	}
	switch method {
	case "Network.requestWillBeSent", "Network.responseReceived", "Network.loadingFailed":
		if json.Unmarshal(params, &p) != nil {
			return
		}
	case "Page.loadEventFired":
	default:
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch method {
	case "Network.requestWillBeSent":
		if seq := seqOf(p.Request.URL); seq != "" {
			e.seqs[p.RequestID] = seq
		}
	case "Network.responseReceived":
		if seq := seqOf(p.Response.URL); seq != "" {
			e.responses[seq] = p.Response
		}
	case "Network.loadingFailed":
		if seq, ok := e.seqs[p.RequestID]; ok {
			e.failures[seq] = p.ErrorText
		}
	case "Page.loadEventFired":
		e.loaded = true
	}
	close(e.changed)
	e.changed = make(chan struct{})
}

// waitFor waits until done, called under the lock, reports true, or ctx ends.
func (e *events) waitFor(ctx context.Context, done func() bool) bool {
	for {
		e.mu.Lock()
		ok, ch := done(), e.changed
		e.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// outcome waits for the response to request seq, or its failure, until ctx ends.
func (e *events) outcome(ctx context.Context, seq int) (r response, failure string, ok bool) {
	key := strconv.Itoa(seq)
	ok = e.waitFor(ctx, func() bool {
		var seen, failed bool
		r, seen = e.responses[key]
		failure, failed = e.failures[key]
		return seen || failed
	})
	return r, failure, ok
}
