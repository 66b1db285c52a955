package scenario

import (
	"errors"
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/replay"
	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
)

// ReplayConfig is the reader's config for a run's load.replay.
func ReplayConfig(l Load) replay.Config {
	return replay.Config{Path: l.ReplayPath, Format: l.ReplayFormat, Key: l.ReplayClient,
		Fields: replay.Fields{Time: l.ReplayFields.Time, Client: l.ReplayFields.Client, UserAgent: l.ReplayFields.UserAgent},
		From:   l.ReplayFrom.D(), To: l.ReplayTo.D(), Sample: l.ReplaySample, Seed: l.Seed}
}

// replayScan is what reading a recording once found, kept per loader so that the
// variants of one file read it once.
type replayScan struct {
	sum replay.Summary
	err error
}

// checkReplay resolves load.replay and reads the whole recording once (streaming): the
// run's request count and span come from it, and a file that cannot be opened or has no
// good line is a load error at the field.
func (l *loader) checkReplay(r *Run, node *yaml.Node, at func(string) *yaml.Node, where string) {
	ld := &r.Settings.Load
	if ld.Replay == "" {
		return
	}
	if _, req := yamldoc.Lookup(yamldoc.Resolve(at("load")), "requests"); req != nil {
		l.add(req, "load.requests", "a replay sends the recording's requests; remove load.requests%s", where)
	}
	if _, c := yamldoc.Lookup(yamldoc.Resolve(at("load")), "concurrency"); c != nil {
		l.add(c, "load.concurrency", "a replay starts each request at its recorded time, however many are in flight; remove load.concurrency%s", where)
	}
	for _, f := range []struct {
		path string
		set  bool
	}{{"load.burst", ld.Burst > 0}, {"load.rate", ld.Rate > 0}, {"load.pause", ld.Pause.Max > 0}} {
		if f.set {
			l.add(at(f.path), f.path, "a replay keeps the recorded start times; %s does not apply%s", f.path, where)
		}
	}
	if r.Settings.Client.Exec != nil {
		l.add(at("load.replay"), "load.replay", "a replay needs a model client (one pool per recorded client); client.exec runs its own schedule%s", where)
	}
	if ld.ReplayTo > 0 && ld.ReplayTo <= ld.ReplayFrom {
		l.add(at("load.replay_to"), "load.replay_to", "the window ends (%s) at or before it starts (%s)%s", ld.ReplayTo, ld.ReplayFrom, where)
	}
	if err := replay.CheckKey(ld.ReplayFormat, ld.ReplayClient); err != nil {
		l.add(at("load.replay_client"), "load.replay_client", "%v%s", err, where)
		return // the reader would refuse it again
	}
	ld.ReplayPath = ld.Replay
	if !filepath.IsAbs(ld.ReplayPath) {
		ld.ReplayPath = filepath.Join(filepath.Dir(l.file), ld.Replay)
	}
	sc := l.scan(ReplayConfig(*ld))
	unreadable := errors.As(sc.err, new(*replay.UnreadableError))
	switch {
	case sc.err != nil && !unreadable:
		l.add(at("load.replay"), "load.replay", "%v%s", sc.err, where)
	case sc.sum.Requests == 0:
		l.add(at("load.replay"), "load.replay", "%s: no request to replay (%s)%s", ld.Replay, emptyWhy(sc.sum), where)
	case unreadable:
		l.add(at("load.replay"), "load.replay", "%s: %v%s", ld.Replay, sc.err, where)
	default:
		ld.Requests, ld.ReplaySpan = sc.sum.Requests, sc.sum.Span
		if ld.Concurrency <= 0 {
			ld.Concurrency = 1
		}
	}
}

// scan reads a recording once per config.
func (l *loader) scan(cfg replay.Config) replayScan {
	if sc, ok := l.replays[cfg]; ok {
		return sc
	}
	if l.replays == nil {
		l.replays = map[replay.Config]replayScan{}
	}
	var sc replayScan
	sc.sum, sc.err = replay.Scan(cfg)
	l.replays[cfg] = sc
	return sc
}

// emptyWhy says why a recording yielded nothing.
func emptyWhy(s replay.Summary) string {
	why := fmt.Sprintf("%d lines read, %d bad", s.Lines, s.BadLines)
	if len(s.FirstBad) > 0 {
		why += fmt.Sprintf("; line %d: %s", s.FirstBad[0].Line, s.FirstBad[0].Reason)
	}
	if s.Skipped > 0 {
		why += fmt.Sprintf("; %d outside the window or the sample", s.Skipped)
	}
	return why
}
