// Package runfile writes and reads the run file whose lines are defined in
// zerodrop.dev/zerodrop/apis/v1 (see its package comment for the format): one JSON-lines
// file per run, streamed to disk as it happens.
//
// # Durability
//
// The Writer buffers lines and flushes at least every FlushInterval (200 ms by
// default) and on Close, so a killed run loses at most the last interval. The
// Reader accepts a file whose last line is cut off mid-way and reports it via
// Truncated.
package runfile
