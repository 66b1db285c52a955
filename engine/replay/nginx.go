package replay

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"time"
)

// nginxTimeLocal is $time_local's layout.
const nginxTimeLocal = "02/Jan/2006:15:04:05 -0700"

// nginxParser reads nginx's combined format:
//
//	$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"
//
// optionally followed by $request_time and/or $msec, told apart by size ($msec is an
// epoch, above 1e9). nginx writes a line when the request ends: ngx_http_log_module
// (nginx.org/en/docs/http/ngx_http_log_module.html) gives $msec as "time in seconds with a
// milliseconds resolution at the time of the log write" and $request_time as the "time
// elapsed between the first bytes were read from the client and the log write after the
// last bytes were sent to the client"; $time_local is the log write's time too. So the
// start is ($msec, else $time_local) minus $request_time when the line has it. $time_local
// has a one-second resolution and is kept as it is (not spread): requests of one client
// within one second start together, so a log meant for replay should carry $msec.
type nginxParser struct {
	lines lines
	ua    bool
}

func (p *nginxParser) next() (record, int, error) {
	b, n, err := p.lines.next()
	if err != nil {
		return record{}, n, err
	}
	rec, err := parseNginx(b, p.ua)
	rec.line = n
	return rec, n, err
}

// parseNginx parses one combined-format line.
func parseNginx(b []byte, ua bool) (record, error) {
	var rec record
	addr, rest, ok := bytes.Cut(b, []byte(" "))
	if !ok || len(addr) == 0 {
		return rec, badLine{"no remote address"}
	}
	open := bytes.IndexByte(rest, '[')
	end := bytes.IndexByte(rest, ']')
	if open < 0 || end < open {
		return rec, badLine{"no [time_local]"}
	}
	local := rest[open+1 : end]
	if len(local) != len(nginxTimeLocal) {
		return rec, badLine{fmt.Sprintf("time_local %q is not like 02/Dec/2026:03:00:00 +0000", local)}
	}
	rest = rest[end+1:]
	var fields [3][]byte // request, referer, user agent
	var status []byte
	for i := range fields {
		rest = bytes.TrimLeft(rest, " ")
		if i == 1 {
			// $status $body_bytes_sent between the request and the referer.
			var sent []byte
			status, rest, _ = bytes.Cut(rest, []byte(" "))
			sent, rest, _ = bytes.Cut(rest, []byte(" "))
			if !digits(status) || len(status) != 3 || (!digits(sent) && string(sent) != "-") {
				return rec, badLine{"no $status $body_bytes_sent after the request"}
			}
		}
		if fields[i], rest, ok = quoted(rest); !ok {
			return rec, badLine{[]string{"no quoted request", "no quoted referer", "no quoted user agent"}[i]}
		}
	}
	start, err := nginxStart(local, bytes.Fields(rest))
	if err != nil {
		return rec, err
	}
	rec.at, rec.key = start, string(addr)
	if ua {
		rec.key = string(fields[2])
	}
	return rec, nil
}

// nginxStart is the request's start: the log write ($msec, else $time_local, parsed only
// then) minus $request_time.
func nginxStart(local []byte, extra [][]byte) (time.Time, error) {
	msec, took := -1.0, 0.0
	for _, f := range extra {
		v, err := strconv.ParseFloat(string(f), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return time.Time{}, badLine{fmt.Sprintf("trailing field %q is not $request_time or $msec", f)}
		}
		if v >= 1e9 {
			msec = v
		} else {
			took = v
		}
	}
	end := msec
	if msec < 0 {
		t, err := time.Parse(nginxTimeLocal, string(local))
		if err != nil {
			return time.Time{}, badLine{fmt.Sprintf("time_local %q is not like 02/Dec/2026:03:00:00 +0000", local)}
		}
		end = float64(t.Unix())
	}
	return time.UnixMilli(int64(math.Round((end - took) * 1000))), nil
}

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// quoted splits off a leading "..." (nginx escapes a quote inside as \x22, older versions
// as \"), returning its contents and the rest.
func quoted(b []byte) (in, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, b, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[1:i], b[i+1:], true
		}
	}
	return nil, b, false
}
