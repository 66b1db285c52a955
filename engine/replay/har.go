package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// harParser streams a HAR 1.2 file's log.entries with encoding/json's token API, one
// entry decoded at a time, so a large file is never held whole. An entry's number (from
// 1) stands for its line. HAR records no client address: the client key is the entry's
// page (pageref) by default, else the request header the key names (user_agent:
// User-Agent).
type harParser struct {
	dec     *json.Decoder
	header  string // "" groups by page
	n       int
	started bool
}

func newHARParser(br *bufio.Reader, key string) *harParser {
	p := &harParser{dec: json.NewDecoder(br)}
	switch key {
	case "", KeyAddr, "page":
	case KeyUserAgent:
		p.header = "User-Agent"
	default:
		p.header = key
	}
	return p
}

type harEntry struct {
	Pageref         string `json:"pageref"`
	StartedDateTime string `json:"startedDateTime"`
	Request         struct {
		Method  string `json:"method"`
		URL     string `json:"url"`
		Headers []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"headers"`
	} `json:"request"`
}

func (p *harParser) next() (record, int, error) {
	if !p.started {
		p.started = true
		if err := p.toEntries(); err != nil {
			return record{}, 0, fmt.Errorf("not a HAR file: %w", err)
		}
	}
	if !p.dec.More() {
		// The entries end with their closing bracket; a file cut short ends without it.
		if t, err := p.dec.Token(); err != nil || t != json.Delim(']') {
			return record{}, p.n, fmt.Errorf("the file ends inside log.entries after entry %d: it is cut short", p.n)
		}
		return record{}, p.n, io.EOF // the rest of the document is not read
	}
	p.n++
	var e harEntry
	if err := p.dec.Decode(&e); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return record{}, p.n, badLine{fmt.Sprintf("%s is a JSON %s, not a %s", te.Field, te.Value, te.Type)}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Not the end of the recording: the file stops inside log.entries.
			return record{}, p.n, fmt.Errorf("the file ends inside log.entries after entry %d: it is cut short", p.n-1)
		}
		return record{}, p.n, fmt.Errorf("entry %d: %w (the rest of the file is not read)", p.n, err)
	}
	rec, err := p.record(e)
	rec.line = p.n
	return rec, p.n, err
}

func (p *harParser) record(e harEntry) (record, error) {
	at, err := time.Parse(time.RFC3339Nano, e.StartedDateTime)
	if err != nil {
		return record{}, badLine{fmt.Sprintf("startedDateTime %q is not an ISO 8601 time", e.StartedDateTime)}
	}
	if e.Request.Method == "" || e.Request.URL == "" {
		return record{}, badLine{"no request.method or request.url"}
	}
	if p.header == "" {
		return record{at: at, key: e.Pageref}, nil
	}
	for _, h := range e.Request.Headers {
		if strings.EqualFold(h.Name, p.header) {
			return record{at: at, key: h.Value}, nil
		}
	}
	return record{}, badLine{fmt.Sprintf("no %s request header", p.header)}
}

// toEntries walks the document's tokens to the opening of log.entries, skipping every
// other member (log.pages, log.creator) without keeping it.
func (p *harParser) toEntries() error {
	if err := p.open('{'); err != nil {
		return err
	}
	if err := p.member("log"); err != nil {
		return err
	}
	if err := p.open('{'); err != nil {
		return err
	}
	if err := p.member("entries"); err != nil {
		return err
	}
	return p.open('[')
}

func (p *harParser) open(d json.Delim) error {
	t, err := p.dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("expected %q, found %v", d, t)
	}
	return nil
}

// member advances inside an object to the value of the named member.
func (p *harParser) member(name string) error {
	for p.dec.More() {
		t, err := p.dec.Token()
		if err != nil {
			return err
		}
		if t == name {
			return nil
		}
		if err := p.skip(); err != nil {
			return err
		}
	}
	return errors.New("no " + name + " member")
}

// skip reads past one value, a token at a time.
func (p *harParser) skip() error {
	depth := 0
	for {
		t, err := p.dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
