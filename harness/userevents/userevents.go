// Package userevents puts a user's own actions on a run's timeline while a
// load runs: `zerodrop load --events-from PATH` follows a file or a FIFO of
// lines and appends each one to the run file as an event of source "user",
// at the moment it is read, so a run against someone's own cluster shows
// their "kubectl drain" or "helm upgrade" next to what the load saw.
//
// # Line format
//
// One event per line (UTF-8, at most MaxLineBytes):
//
//	drained node-1 by hand                     plain text: an "action" whose message is the line
//	{"type":"pod-unready","object":"pod/ns/a"} JSON: type, object, message, time, fields
//	# a comment, and blank lines               ignored
//
// In JSON every key is optional: type defaults to "action" and must be a
// lower-case word with dashes ([a-z0-9-], at most 63 characters); time, in
// RFC 3339, defaults to when the line was read. Types the verdict reads
// (load-start, load-stop, unsent, criteria) are refused, so a user event
// can mark a timeline but never move a verdict; the source is always
// "user", never one the verdict trusts. A line that breaks these rules is
// skipped and reported (Options.OnBad) with its number and why; reading
// goes on.
//
// # Files and FIFOs
//
// A regular file is followed like `tail -f` from its first line: lines
// appended during the run are picked up within PollInterval. A FIFO (made
// with mkfifo) is opened read-write, which Linux allows (fifo(7): "opening
// a FIFO for read and write will succeed both in blocking and nonblocking
// mode"), so opening never blocks waiting for a writer and a writer closing
// it is no end of input: any number of `echo ... > fifo` can follow one
// another during the run.
package userevents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// MaxLineBytes bounds one line; a longer line is skipped as bad.
const MaxLineBytes = 16 << 10

// PollInterval is how often a regular file is checked for new lines.
const PollInterval = 100 * time.Millisecond

// drainGrace is how long, once the run ends, a FIFO is still read for
// lines already written into it.
const drainGrace = 100 * time.Millisecond

// typePattern is what an event type may look like: the form of the
// project's own types (apis/v1 event.go), so a marker's class name and
// label stay plain.
var typePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// reservedTypes are the event types the verdict reads: a user's line must
// not be able to pass for one of them.
var reservedTypes = map[string]bool{
	zdv1.EventLoadStart: true, zdv1.EventLoadStop: true, zdv1.EventUnsent: true, zdv1.EventCriteria: true,
	zdv1.EventInstrumentPause: true, zdv1.EventGoAway: true,
}

// Options configure Follow.
type Options struct {
	// OnBad is told about every line that was skipped (1-based line number,
	// the line as read, why). Nil ignores them (they are still counted).
	OnBad func(line int, text string, err error)
	// Now replaces time.Now (tests).
	Now func() time.Time
	// Poll replaces PollInterval (tests).
	Poll time.Duration
}

// Stats is what Follow read.
type Stats struct {
	// Events counts the events handed to the sink; Bad the lines skipped.
	Events, Bad int
}

// line is a JSON line. Unknown keys are an error: a typo ("mesage") would
// otherwise vanish without a trace.
type line struct {
	Type    string            `json:"type"`
	Object  string            `json:"object"`
	Message string            `json:"message"`
	Time    *time.Time        `json:"time"`
	Fields  map[string]string `json:"fields"`
}

// Parse turns one line into an event read at now; ok is false for a blank
// or comment line.
func Parse(text string, now time.Time) (e zdv1.Event, ok bool, err error) {
	s := strings.TrimSpace(text)
	if s == "" || strings.HasPrefix(s, "#") {
		return zdv1.Event{}, false, nil
	}
	e = zdv1.Event{Time: now, Source: zdv1.SourceUser, Type: zdv1.EventAction}
	if !strings.HasPrefix(s, "{") {
		e.Message = s
		return e, true, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var l line
	if err := dec.Decode(&l); err != nil {
		return zdv1.Event{}, false, fmt.Errorf("not a JSON event: %w", err)
	}
	if dec.More() {
		return zdv1.Event{}, false, errors.New("not a JSON event: text after the object")
	}
	if l.Type != "" {
		if !typePattern.MatchString(l.Type) {
			return zdv1.Event{}, false, fmt.Errorf("type %q: want lower-case letters, digits and dashes, at most 63", l.Type)
		}
		if reservedTypes[l.Type] {
			return zdv1.Event{}, false, fmt.Errorf("type %q is the load generator's or the harness's own, which the verdict reads", l.Type)
		}
		e.Type = l.Type
	}
	if l.Time != nil {
		e.Time = *l.Time
	}
	e.Object, e.Message, e.Fields = l.Object, l.Message, l.Fields
	if e.Object == "" && e.Message == "" && l.Type == "" {
		return zdv1.Event{}, false, errors.New("JSON event says nothing: give at least a type, an object or a message")
	}
	return e, true, nil
}

// Source is an opened file or FIFO of events.
type Source struct {
	path string
	f    *os.File
	fifo bool
}

// Open opens path for Follow. The command opens it before the load
// starts, so a wrong path is bad input rather than a broken run.
func Open(path string) (*Source, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("events from %s: %w", path, err)
	}
	src := &Source{path: path}
	switch {
	case st.Mode()&fs.ModeNamedPipe != 0:
		src.f, err = os.OpenFile(path, os.O_RDWR, 0)
		src.fifo = true
	case st.Mode().IsRegular():
		src.f, err = os.Open(path)
	default:
		return nil, fmt.Errorf("events from %s: %s is neither a regular file nor a FIFO", path, st.Mode().Type())
	}
	if err != nil {
		return nil, fmt.Errorf("events from %s: %w", path, err)
	}
	return src, nil
}

// Follow reads events and hands each to sink as it is read, until ctx is
// done; then it reads what is already there, closes the source and
// returns. A failing read is an error; a bad line is not (see
// Options.OnBad).
func (src *Source) Follow(ctx context.Context, sink zdv1.EventSink, opt Options) (Stats, error) {
	defer func() { _ = src.f.Close() }()
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Poll <= 0 {
		opt.Poll = PollInterval
	}
	fl := follower{path: src.path, sink: sink, opt: opt}
	var err error
	if src.fifo {
		err = fl.fifo(ctx, src.f)
	} else {
		err = fl.file(ctx, src.f)
	}
	return fl.stats, err
}

// Close closes a source that will not be followed.
func (src *Source) Close() error { return src.f.Close() }

// Follow opens path and follows it (Open, then Source.Follow).
func Follow(ctx context.Context, path string, sink zdv1.EventSink, opt Options) (Stats, error) {
	src, err := Open(path)
	if err != nil {
		return Stats{}, err
	}
	return src.Follow(ctx, sink, opt)
}

type follower struct {
	path    string
	sink    zdv1.EventSink
	opt     Options
	stats   Stats
	pending []byte
	lineNo  int
	// skipping is set while the rest of an over-long line is thrown away.
	skipping bool
}

// file follows a regular file: read to its end, wait, read again.
func (fl *follower) file(ctx context.Context, f *os.File) error {
	buf := make([]byte, 32<<10)
	t := time.NewTicker(fl.opt.Poll)
	defer t.Stop()
	for {
		n, err := f.Read(buf)
		fl.take(buf[:n])
		switch {
		case err == nil:
			continue
		case !errors.Is(err, io.EOF):
			return fmt.Errorf("events from %s: %w", fl.path, err)
		}
		select {
		case <-ctx.Done():
			// Everything up to now has been read; a last line without
			// its newline counts too.
			fl.finish()
			return nil
		case <-t.C:
		}
	}
}

// fifo reads a FIFO until ctx is done, then for drainGrace more.
func (fl *follower) fifo(ctx context.Context, f *os.File) error {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			// A FIFO is pollable, so a deadline ends a blocked Read.
			_ = f.SetReadDeadline(time.Now().Add(drainGrace))
		case <-stop:
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		fl.take(buf[:n])
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, os.ErrClosed):
			fl.finish()
			return nil
		case errors.Is(err, io.EOF), errors.Is(err, syscall.EAGAIN):
			// Not with O_RDWR on Linux; elsewhere, wait for a writer.
			select {
			case <-ctx.Done():
				fl.finish()
				return nil
			case <-time.After(fl.opt.Poll):
			}
		default:
			return fmt.Errorf("events from %s: %w", fl.path, err)
		}
	}
}

// take splits data into lines and handles each complete one.
func (fl *follower) take(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			fl.pending = append(fl.pending, data...)
			if len(fl.pending) > MaxLineBytes && !fl.skipping {
				fl.lineNo++
				fl.bad(string(fl.pending[:80])+"…", fmt.Errorf("line longer than %d bytes", MaxLineBytes))
				fl.skipping = true
			}
			if fl.skipping {
				fl.pending = fl.pending[:0]
			}
			return
		}
		fl.pending = append(fl.pending, data[:i]...)
		data = data[i+1:]
		if fl.skipping {
			fl.skipping = false
			fl.pending = fl.pending[:0]
			continue
		}
		fl.lineNo++
		fl.handle(fl.pending)
		fl.pending = fl.pending[:0]
	}
}

// finish handles a last line that has no newline yet.
func (fl *follower) finish() {
	if len(fl.pending) > 0 && !fl.skipping {
		fl.lineNo++
		fl.handle(fl.pending)
	}
	fl.pending = fl.pending[:0]
}

func (fl *follower) handle(raw []byte) {
	text := string(bytes.TrimSuffix(raw, []byte("\r")))
	if len(raw) > MaxLineBytes {
		fl.bad(text[:80]+"…", fmt.Errorf("line longer than %d bytes", MaxLineBytes))
		return
	}
	e, ok, err := Parse(text, fl.opt.Now())
	if err != nil {
		fl.bad(text, err)
		return
	}
	if !ok {
		return
	}
	if err := fl.sink.Event(e); err != nil {
		fl.bad(text, fmt.Errorf("not recorded: %w", err))
		return
	}
	fl.stats.Events++
}

func (fl *follower) bad(text string, err error) {
	fl.stats.Bad++
	if fl.opt.OnBad != nil {
		fl.opt.OnBad(fl.lineNo, text, err)
	}
}
