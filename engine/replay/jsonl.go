package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// jsonlParser reads one JSON object per line, with a start time (RFC 3339, or epoch
// seconds; a number above 1e11 is taken as epoch milliseconds, since 1e11 seconds is
// in the year 5138) and a client key.
type jsonlParser struct {
	lines        lines
	time, client string
}

func newJSONLParser(br *bufio.Reader, key string, f Fields) *jsonlParser {
	p := &jsonlParser{lines: lines{r: br}, time: or(f.Time, "time"), client: or(f.Client, "client")}
	switch key {
	case "", KeyAddr:
	case KeyUserAgent:
		p.client = or(f.UserAgent, "user_agent")
	default:
		p.client = key
	}
	return p
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (p *jsonlParser) next() (record, int, error) {
	b, n, err := p.lines.next()
	if err != nil {
		return record{}, n, err
	}
	rec, err := p.parse(b)
	rec.line = n
	return rec, n, err
}

func (p *jsonlParser) parse(b []byte) (record, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return record{}, badLine{"not a JSON object: " + err.Error()}
	}
	raw, ok := obj[p.time]
	if !ok {
		return record{}, badLine{fmt.Sprintf("no %q field", p.time)}
	}
	at, err := parseTime(raw)
	if err != nil {
		return record{}, badLine{fmt.Sprintf("%q: %v", p.time, err)}
	}
	raw, ok = obj[p.client]
	if !ok {
		return record{}, badLine{fmt.Sprintf("no %q field", p.client)}
	}
	key, err := keyOf(raw)
	if err != nil {
		return record{}, badLine{fmt.Sprintf("%q: %v", p.client, err)}
	}
	return record{at: at, key: key}, nil
}

// parseTime reads an RFC 3339 string or an epoch number (seconds, or milliseconds above
// 1e11).
func parseTime(raw json.RawMessage) (time.Time, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
		}
		return t, nil
	}
	v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1e15 {
		return time.Time{}, fmt.Errorf("%s is not an RFC 3339 string or epoch seconds or milliseconds", clip(raw))
	}
	if v > 1e11 {
		return time.UnixMilli(int64(math.Round(v))), nil
	}
	return time.UnixMicro(int64(math.Round(v * 1e6))), nil
}

// keyOf reads a client key: a string or a number.
func keyOf(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("%s is not a string or a number", clip(raw))
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
