package diff

import (
	"regexp"
	"testing"

	"github.com/kalab-dev/kalab/engine/testkit/reporttest"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

func baseRun(sc, variant string) *report.Run { return reporttest.Run(sc, variant) }

func loadBase(t *testing.T, runs ...*report.Run) *baseline.Baseline {
	t.Helper()
	return reporttest.Baseline(t, runs...)
}

func matches(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
