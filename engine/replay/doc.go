// Package replay reads recorded traffic (an nginx combined access log, JSON lines, or a
// HAR 1.2 file) as a stream of timed requests, each with the key of the client that sent
// it, in bounded memory.
//
// # Streaming
//
// A Source reads its file as it is consumed: a line (or a HAR entry) at a time, through
// a reorder window of Config.Window requests (a min-heap on start time), so memory does
// not grow with the file. nginx writes a line when a request ends, so start times taken
// as $msec - $request_time are slightly out of file order; the window puts them back in
// order. A request that arrives later than the window can reorder is replayed at once
// (it is counted in Summary.Late).
//
// # Bad lines
//
// A line that does not parse is counted, and the first MaxBad of them are kept with
// their line numbers (a HAR file's entry numbers) and a reason: never silently dropped.
// A HAR file is one JSON document, so a syntax error ends it (reported as one bad entry).
package replay
