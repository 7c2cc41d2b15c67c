package runfile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Record is one decoded line. Exactly one of Header, Result, Event, End is set
// for the known kinds; lines of unknown kinds have only Kind and Line.
type Record struct {
	Kind   string
	Line   int // 1-based line number
	Header *zdv1.Header
	Result *zdv1.Result
	Event  *zdv1.Event
	End    *zdv1.End
}

// Reader decodes a run file line by line, holding only the current line in
// memory.
type Reader struct {
	br        *bufio.Reader
	name      string
	line      int
	truncated bool
	done      bool
	corrupt   Corrupt
	chain     zdv1.Chain
	chained   int64 // lines in chain
	ended     bool  // the end line was read: the chain stops before it
}

// Corrupt counts the complete lines a Reader skipped because they did not
// decode (a disk or copy error in the middle of a file). The lines around
// them are still read: one bad line must not hide the thousands after it,
// but a verdict must not pass a file with holes in it either.
type Corrupt struct {
	Lines int64 `json:"lines"`
	// First is the number of the first skipped line and FirstError why it
	// did not decode.
	First      int    `json:"first,omitempty"`
	FirstError string `json:"firstError,omitempty"`
}

// NewReader reads a run file from r; name is used in errors.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), name: name, chain: zdv1.NewChain()}
}

// Chain is the head of the hash chain (zdv1.Chain) over the complete lines
// read before the end line, and how many lines it covers: what the end
// line's Chain must say. Valid once Next has returned io.EOF.
func (r *Reader) Chain() (head string, lines int64) { return r.chain.Head(), r.chained }

// Truncated reports whether the last line was cut off (the writer was killed
// mid-line). Valid once Next has returned io.EOF.
func (r *Reader) Truncated() bool { return r.truncated }

// Corrupt reports the lines skipped so far because they did not decode.
func (r *Reader) Corrupt() Corrupt { return r.corrupt }

var (
	prefixResult = []byte(`{"kind":"result",`)
	prefixEvent  = []byte(`{"kind":"event",`)
)

// Next returns the next record, or io.EOF after the last one. A last line
// without a newline that does not decode is taken as cut off by a killed
// writer: Next returns io.EOF and Truncated reports true. A complete line
// anywhere else that does not decode is skipped and counted (Corrupt). Only
// a failing read is an error.
func (r *Reader) Next() (Record, error) {
	for {
		if r.done {
			return Record{}, io.EOF
		}
		data, err := r.br.ReadBytes('\n')
		complete := err == nil
		if err != nil && !errors.Is(err, io.EOF) {
			return Record{}, fmt.Errorf("read %s after line %d: %w", r.name, r.line, err)
		}
		if !complete {
			r.done = true
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			if complete {
				r.line++
				continue
			}
			return Record{}, io.EOF
		}
		r.line++
		rec, derr := decodeLine(data)
		if derr != nil {
			if !complete {
				r.truncated = true
				return Record{}, io.EOF
			}
			r.link(data, "")
			if r.corrupt.Lines == 0 {
				r.corrupt.First, r.corrupt.FirstError = r.line, derr.Error()
			}
			r.corrupt.Lines++
			continue
		}
		rec.Line = r.line
		r.link(data, rec.Kind)
		return rec, nil
	}
}

// link adds a line to the chain, up to the end line.
func (r *Reader) link(data []byte, kind string) {
	if r.ended {
		return
	}
	if kind == zdv1.KindEnd {
		r.ended = true
		return
	}
	r.chain.Add(data)
	r.chained++
}

func decodeLine(data []byte) (Record, error) {
	// Fast path: the writer always puts "kind" first, so the two frequent
	// kinds decode in one pass.
	switch {
	case bytes.HasPrefix(data, prefixResult):
		var res zdv1.Result
		if err := json.Unmarshal(data, &res); err != nil {
			return Record{}, fmt.Errorf("decode result line: %w", err)
		}
		return Record{Kind: zdv1.KindResult, Result: &res}, nil
	case bytes.HasPrefix(data, prefixEvent):
		var ev zdv1.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return Record{}, fmt.Errorf("decode event line: %w", err)
		}
		return Record{Kind: zdv1.KindEvent, Event: &ev}, nil
	}
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(data, &k); err != nil {
		return Record{}, fmt.Errorf("decode line: %w", err)
	}
	rec := Record{Kind: k.Kind}
	var target any
	switch k.Kind {
	case zdv1.KindMeta:
		rec.Header = &zdv1.Header{}
		target = rec.Header
	case zdv1.KindResult:
		rec.Result = &zdv1.Result{}
		target = rec.Result
	case zdv1.KindEvent:
		rec.Event = &zdv1.Event{}
		target = rec.Event
	case zdv1.KindEnd:
		rec.End = &zdv1.End{}
		target = rec.End
	case "":
		return Record{}, errors.New(`line has no "kind"`)
	default:
		return rec, nil // a newer kind: skipped by callers
	}
	if err := json.Unmarshal(data, target); err != nil {
		return Record{}, fmt.Errorf("decode %s line: %w", k.Kind, err)
	}
	return rec, nil
}

// Stats is what reading a whole run file found besides its records.
type Stats struct {
	// Truncated: the last line was cut off (the writer was killed).
	Truncated bool
	// Corrupt counts the complete lines that did not decode and were skipped.
	Corrupt Corrupt
	// SHA256 is the hex digest of the file's bytes as read, so a report can
	// name exactly the evidence it was computed from.
	SHA256 string
	// Chain is the hash chain's head over the lines before the end line
	// (Reader.Chain), and ChainLines how many lines it covers.
	Chain      string
	ChainLines int64
}

// ReadFile streams every record of the run file at path to fn, stopping at
// the first error fn returns, and reports what else it found.
func ReadFile(path string, fn func(Record) error) (Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return Stats{}, fmt.Errorf("open run file: %w", err)
	}
	defer f.Close()
	return Read(f, path, fn)
}

// Read is ReadFile on a run file's bytes from src; name is used in errors.
func Read(src io.Reader, name string, fn func(Record) error) (Stats, error) {
	h := sha256.New()
	r := NewReader(io.TeeReader(src, h), name)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			// The reader stops at a cut-off last line; hash what follows so
			// the digest is the whole file's.
			if _, err := io.Copy(h, src); err != nil {
				return Stats{}, fmt.Errorf("read %s: %w", name, err)
			}
			head, lines := r.Chain()
			return Stats{Truncated: r.Truncated(), Corrupt: r.Corrupt(), SHA256: hex.EncodeToString(h.Sum(nil)),
				Chain: head, ChainLines: lines}, nil
		}
		if err != nil {
			return Stats{}, err
		}
		if err := fn(rec); err != nil {
			return Stats{}, err
		}
	}
}

// Digest is the hex SHA-256 of the file at path, as ReadFile reports it.
func Digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open run file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadMeta returns the meta line of the run file at path, which must be its
// first record.
func ReadMeta(path string) (zdv1.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return zdv1.Header{}, fmt.Errorf("open run file: %w", err)
	}
	defer f.Close()
	rec, err := NewReader(f, path).Next()
	switch {
	case errors.Is(err, io.EOF):
		return zdv1.Header{}, fmt.Errorf("run file %s is empty: no meta line", path)
	case err != nil:
		return zdv1.Header{}, err
	case rec.Header == nil:
		return zdv1.Header{}, fmt.Errorf("run file %s starts with a %q line, not meta", path, rec.Kind)
	}
	return *rec.Header, nil
}
