// Package timeline draws the HTML report's request timeline of one run: a lane per client
// connection, a bar per request coloured by what happened to it (new, reused, failed,
// retried, re-sent), the closes of each connection marked on its lane, the pauses between
// bursts behind them and the time axis below. Up to MaxDrawn requests each is an SVG bar;
// above it each lane is a row of time buckets; above CanvasLanes lanes the page's script
// paints them on a canvas from CanvasData. A run too large to hold its requests is drawn
// from a Digest built as its request file is read. The rest of the page (the histogram,
// the phases, the checks) is cmd/kalab/internal/htmlreport's.
package timeline
