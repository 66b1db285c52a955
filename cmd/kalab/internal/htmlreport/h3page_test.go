package htmlreport

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// File 20 on the virtual clock, rendered by Chromium: each HTTP/3 run's header gives its
// QUIC counts as the record has them (path migrations, PINGs, datagrams the NAT dropped);
// its legend speaks of no FIN or reset, which QUIC does not send, and its timeline draws
// no FIN mark.
func TestBrowserHTTP3RunHeaderAndLegend(t *testing.T) {
	t.Parallel()
	plan, err := scenario.LoadFiles([]string{"../../../../scenarios/20-h3-nat-rebinding.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: filepath.Join(dir, "results"),
		KalabVersion: "test", Log: zerolog.Nop(), Parallel: 1, Host: runner.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]struct {
		Header, Legend string
		Fins           int
	}
	probe(t, renderPage(t, out.Dir), "", `
var o={};document.querySelectorAll("details.run").forEach(function(d){
  var l=d.querySelector(".legend");
  o[d.getAttribute("data-run")]={header:d.querySelector("summary").textContent,legend:l?l.textContent:"",fins:d.querySelectorAll(".mark.fin").length};});
return o;`, &got)
	if len(got) != len(out.Runs) {
		t.Fatalf("the page has %d runs; the results %d", len(got), len(out.Runs))
	}
	for _, r := range out.Runs {
		g, m := got[r.Scenario+" / "+r.Variant], r.Metrics
		want := fmt.Sprintf("HTTP/3: %v path migrations · %v PINGs sent · %v datagrams dropped by the NAT", m.PathMigrations, m.PingsSent, m.MiddleboxDroppedDatagrams)
		if !strings.Contains(g.Header, want) {
			t.Errorf("%s: the header %q lacks %q", r.Variant, g.Header, want)
		}
		for _, bad := range []string{"FIN reaches", "reset or EOF"} {
			if strings.Contains(g.Legend, bad) {
				t.Errorf("%s: the legend speaks of %q: %q", r.Variant, bad, g.Legend)
			}
		}
		if !strings.Contains(g.Legend, "no FIN") || g.Fins != 0 {
			t.Errorf("%s: legend %q, %d FIN marks; want QUIC's legend and none", r.Variant, g.Legend, g.Fins)
		}
	}
	// How many datagrams the NAT drops is quic-go's packing (a datagram or two either way
	// from run to run, as the record's note says); that the long poll loses some is the file's.
	for _, r := range out.Runs {
		if r.Variant == "long-poll" && r.Metrics.MiddleboxDroppedDatagrams == 0 {
			t.Errorf("long-poll: no datagram dropped at the NAT; the file's run loses its flow")
		}
	}
}

// The file links at the top: each status badge sits with its own file's name, nearer to it
// than to the next file's.
func TestBrowserFileBadgesByTheirFile(t *testing.T) {
	t.Parallel()
	var got []struct{ Own, Next float64 }
	probe(t, fixturePage(t, true), "", `
var as=[].slice.call(document.querySelectorAll("nav a")),out=[];
as.forEach(function(a,i){var r=a.getBoundingClientRect(),b=a.nextElementSibling.getBoundingClientRect();
  out.push({own:b.left-r.right,next:i+1<as.length?as[i+1].getBoundingClientRect().left-b.right:-1});});
return out;`, &got)
	if len(got) < 2 {
		t.Fatalf("%d file links; the fixture has 2 files", len(got))
	}
	for i, g := range got {
		if g.Own < 0 || (g.Next >= 0 && g.Own*2 > g.Next) {
			t.Errorf("file %d: its badge is %.1f px from its name and %.1f px from the next file's; want it at most half as far from its own", i, g.Own, g.Next)
		}
	}
}
