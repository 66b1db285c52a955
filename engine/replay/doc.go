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
//
// # Memory
//
// Peak RSS of kalab validate (which reads the whole recording, as a replay does) on
// synthetic nginx logs with $request_time and $msec, 10,000 clients, 131 bytes a line,
// 2 cores (AMD EPYC, Linux, Go 1.26.8), on a machine shared with other builds,
// 2026-12-02: 10.6 MB (80,000 lines) 20.2 MB in 0.4 s; 107 MB (810,000 lines) 21.2 MB in
// 1.1 s; 1.07 GB (8.1 million lines) 23.0 MB in 11.8 s. A run replaying the 1.07 GB log
// (replay_sample 0.0005, time_scale 0.001: 1,620 requests of 2 clients, every line read
// and parsed while the clock ran) peaked at 26.8 MB, the 10.6 MB one at 23.2 MB.
package replay
