// Package htmlreport renders a results directory as one self-contained HTML file: per
// scenario file its runs side by side with their checks, and per run a request timeline
// with one lane per client connection (drawn by cmd/kalab/internal/htmlreport/timeline), a
// latency histogram, the phases of a request and the resolved parameters. It reads the
// results, their request and connection files (a run too large to hold as a digest), and
// an optional baseline to compare with.
//
// The charts are SVG written by this package (html/template for the page, a strings
// builder for the thousands of bars, whose attributes are numbers and fixed class names),
// with a little inline JavaScript for hover and zoom. Nothing is fetched: the file opens
// from a CI artifact or a mail attachment. A charting library was not used because the
// timeline, the chart that matters, is not a chart any of them draws (lanes of intervals
// with close marks), and embedding one would add 200 KB to 1 MB to every file.
package htmlreport
