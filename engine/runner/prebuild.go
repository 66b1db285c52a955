package runner

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/execclient"
)

// prebuild builds every adapter the planned runs need built (go-http, once per Go release)
// before the first run starts. Built while runs were timed, a build would take the cores
// their timers need, and be timed with the run that started it; here it has the machine
// to itself and no clock but its own generous limit. A build that fails is kept by
// execclient, and each run that needs it ends with its error (no verdict), without
// building again. A program that is not installed is left to the runs to report.
func prebuild(ctx context.Context, jobs []job, opt Options) {
	seen := map[string]bool{}
	for _, j := range jobs {
		cfg := j.c.Exec
		if cfg == nil || cfg.Adapter == nil || len(cfg.Adapter.Build) == 0 {
			continue
		}
		key := cfg.Adapter.Name + "\x00" + cfg.Version + "\x00" + strings.Join(cfg.Env, "\x00")
		if seen[key] || ctx.Err() != nil {
			continue
		}
		seen[key] = true
		start := time.Now()
		_, err := execclient.Identify(ctx, *cfg)
		log := opt.Log.With().Str("adapter", cfg.Adapter.Name).Str("version", cfg.Version).Dur("took", time.Since(start)).Logger()
		switch {
		case err == nil:
			log.Debug().Msg("adapter ready before the runs")
		case errors.Is(err, execclient.ErrMissing):
			log.Debug().Err(err).Msg("adapter's runtime not here: its runs say so")
		default:
			log.Error().Err(err).Msg("building an adapter before the runs failed: its runs end with this error")
		}
	}
}
