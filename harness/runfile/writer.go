package runfile

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// DefaultFlushInterval bounds how much a killed run can lose.
const DefaultFlushInterval = 200 * time.Millisecond

// ErrClosed is returned by a Writer after Close.
var ErrClosed = errors.New("run file writer is closed")

// Writer streams lines to a run file. It is safe for concurrent use by the
// load generator and any number of event producers.
type Writer struct {
	mu      sync.Mutex
	bw      *bufio.Writer
	file    *os.File // nil when writing to a plain io.Writer
	name    string
	err     error // first write error; sticky
	closed  bool
	results int64
	events  int64
	now     func() time.Time
	// flushEach writes every line through at once (flush interval <= 0).
	flushEach bool
	scratch   []byte // result line buffer, guarded by mu
	chain     zdv1.Chain
	sealer    Sealer

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// WriterOption configures a Writer.
type WriterOption func(*writerConfig)

type writerConfig struct {
	flushEvery time.Duration
	now        func() time.Time
	sealer     Sealer
}

// Sealer signs a run file once its writer has closed it (package
// harness/evidence): the header names its KeyID before the first line.
type Sealer interface {
	KeyID() string
	Seal(path string) error
}

// WithSealer has Close sign the file with s. Only for Create: a Writer on
// a plain io.Writer has no file to sign.
func WithSealer(s Sealer) WriterOption {
	return func(c *writerConfig) { c.sealer = s }
}

// WithFlushInterval sets how often buffered lines reach the file (default
// 200 ms). Zero or less flushes after every line.
func WithFlushInterval(d time.Duration) WriterOption {
	return func(c *writerConfig) { c.flushEvery = d }
}

// WithClock replaces time.Now for the created and end times (tests).
func WithClock(now func() time.Time) WriterOption {
	return func(c *writerConfig) { c.now = now }
}

// Create creates a new run file at path and writes its meta line. It refuses
// to overwrite an existing file, since that would destroy a measurement.
func Create(path string, meta zdv1.Header, opts ...WriterOption) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create run file: %w (choose a new output path or remove the old run)", err)
	}
	w, err := newWriter(f, f, path, meta, opts...)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	return w, nil
}

// NewWriter writes a run file to dst, starting with the meta line. Close
// does not close dst.
func NewWriter(dst io.Writer, meta zdv1.Header, opts ...WriterOption) (*Writer, error) {
	return newWriter(dst, nil, "run file", meta, opts...)
}

func newWriter(dst io.Writer, file *os.File, name string, meta zdv1.Header, opts ...WriterOption) (*Writer, error) {
	cfg := writerConfig{flushEvery: DefaultFlushInterval, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.sealer != nil {
		if file == nil {
			return nil, fmt.Errorf("%s: only a run file made by Create can be signed", name)
		}
		meta.SigningKey = cfg.sealer.KeyID()
	}
	meta.Schema = zdv1.RunFileSchema
	if meta.RunID == "" {
		meta.RunID = NewRunID()
	}
	if meta.Created.IsZero() {
		meta.Created = cfg.now()
	}
	w := &Writer{
		bw:     bufio.NewWriterSize(dst, 64<<10),
		file:   file,
		name:   name,
		now:    cfg.now,
		chain:  zdv1.NewChain(),
		sealer: cfg.sealer,
	}
	line, err := json.Marshal(metaLine{Kind: zdv1.KindMeta, Header: &meta})
	if err != nil {
		return nil, fmt.Errorf("encode meta line of %s: %w", name, err)
	}
	if err := w.writeLine(line, nil); err != nil {
		return nil, err
	}
	// The meta line goes out at once so even a run killed in its first
	// moments leaves a file that says what it was.
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if cfg.flushEvery > 0 {
		w.stop = make(chan struct{})
		w.done = make(chan struct{})
		go w.flushLoop(cfg.flushEvery)
	} else {
		w.flushEach = true
	}
	return w, nil
}

// NewRunID returns a short random identifier for a run.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

func (w *Writer) flushLoop(every time.Duration) {
	defer close(w.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.Flush() // a failure is sticky and returned by the next write
		}
	}
}

// Result appends a result line.
func (w *Writer) Result(r zdv1.Result) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	// One line per request: encoded by hand into a reused buffer.
	w.scratch = append(appendResultLine(w.scratch[:0], &r), '\n')
	return w.writeLocked(w.scratch, &w.results)
}

// Event appends an event line; it makes Writer an EventSink. A zero Time is
// set to now; Source and Type are required.
func (w *Writer) Event(e zdv1.Event) error {
	if e.Type == "" || e.Source == "" {
		return fmt.Errorf("event for %s needs a source and a type, got source %q type %q", w.name, e.Source, e.Type)
	}
	if e.Time.IsZero() {
		e.Time = w.now()
	}
	// Events quote what tools printed (kubectl errors, LB messages), which
	// can carry tokens or kubeconfigs; a run file is shared as evidence, so
	// they are redacted on the way in. Fields is copied: the caller's map
	// stays as it was.
	e.Message = zdv1.RedactString(e.Message)
	if len(e.Fields) > 0 {
		f := make(map[string]string, len(e.Fields))
		for k, v := range e.Fields {
			f[k] = zdv1.RedactValue(k, v)
		}
		e.Fields = f
	}
	line, err := json.Marshal(eventLine{Kind: zdv1.KindEvent, Event: &e})
	if err != nil {
		return fmt.Errorf("encode event %s for %s: %w", e.Type, w.name, err)
	}
	return w.writeLine(line, &w.events)
}

func (w *Writer) writeLine(line []byte, counter *int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(append(line, '\n'), counter)
}

// writeLocked writes a newline-terminated line; w.mu is held.
func (w *Writer) writeLocked(line []byte, counter *int64) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if _, err := w.bw.Write(line); err != nil {
		w.err = fmt.Errorf("write %s: %w", w.name, err)
		return w.err
	}
	w.chain.Add(line[:len(line)-1])
	if w.flushEach {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("flush %s: %w", w.name, err)
			return w.err
		}
	}
	if counter != nil {
		*counter++
	}
	return nil
}

// Flush writes buffered lines to the file now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("flush %s: %w", w.name, err)
	}
	return w.err
}

// Counts returns how many result and event lines were written so far.
func (w *Writer) Counts() (results, events int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.results, w.events
}

// Close writes the end line of a clean run, flushes, syncs and closes the
// file. Calling it again returns ErrClosed.
func (w *Writer) Close() error { return w.CloseWithError(nil) }

// CloseWithError is Close for a run that broke: runErr is recorded in the end
// line so analysis reports ERROR with that reason.
func (w *Writer) CloseWithError(runErr error) error {
	if w.stop != nil {
		// Stop the flusher before taking the lock for the last time, since
		// it needs the lock to finish a flush in progress.
		w.stopOnce.Do(func() {
			close(w.stop)
			<-w.done
		})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	end := zdv1.End{Time: w.now(), Results: w.results, Events: w.events, Chain: w.chain.Head()}
	if runErr != nil {
		end.Error = runErr.Error()
	}
	var errs []error
	if w.err == nil {
		line, err := json.Marshal(endLine{Kind: zdv1.KindEnd, End: &end})
		if err != nil {
			errs = append(errs, fmt.Errorf("encode end line of %s: %w", w.name, err))
		} else if _, err := w.bw.Write(append(line, '\n')); err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", w.name, err))
		}
		if err := w.bw.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("flush %s: %w", w.name, err))
		}
	} else {
		errs = append(errs, w.err)
	}
	if w.file != nil {
		if err := w.file.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", w.name, err))
		}
		if err := w.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", w.name, err))
		}
	}
	if w.sealer != nil && len(errs) == 0 {
		if err := w.sealer.Seal(w.name); err != nil {
			errs = append(errs, fmt.Errorf("sign %s: %w", w.name, err))
		}
	}
	return errors.Join(errs...)
}
