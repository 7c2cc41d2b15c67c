package runfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func readAll(t *testing.T, r io.Reader) ([]Record, bool) {
	t.Helper()
	rd := NewReader(r, "test")
	var recs []Record
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return recs, rd.Truncated()
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		recs = append(recs, rec)
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	ready := false
	w, err := NewWriter(&buf, zdv1.Header{
		RunID:    "r1",
		Scenario: zdv1.ScenarioSpec{Name: "s", Role: zdv1.RoleAssertion, Criteria: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}},
		Load:     &zdv1.LoadSettings{Targets: []string{"http://127.0.0.1:1/"}, Rate: 5},
	}, WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	want := zdv1.Result{Seq: 7, ID: "r1-7", Time: t0, Latency: 1500 * time.Microsecond, Status: 200, Pod: "p", Node: "n",
		ClientIP: "127.0.0.1", Ready: &ready, ConnID: "c", ConnRequest: 3, Reused: true}
	if err := w.Result(want); err != nil {
		t.Fatal(err)
	}
	ev := zdv1.Event{Time: t0, Source: zdv1.SourceHarness, Type: zdv1.EventCordon, Object: "node/a", Fields: map[string]string{"k": "v"}}
	if err := w.Event(ev); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, trunc := readAll(t, &buf)
	if trunc {
		t.Fatal("clean file reported truncated")
	}
	if len(recs) != 4 {
		t.Fatalf("got %d records, want 4:\n%s", len(recs), buf.String())
	}
	if m := recs[0].Header; m == nil || m.Schema != zdv1.RunFileSchema || m.RunID != "r1" || m.Scenario.Name != "s" ||
		m.Load.Rate != 5 || *m.Scenario.Criteria.MaxDropped != 0 || !m.Created.Equal(t0) {
		t.Errorf("meta = %+v", recs[0].Header)
	}
	got := recs[1].Result
	if got == nil || got.ID != want.ID || got.Latency != want.Latency || !got.Time.Equal(t0) || got.Ready == nil || *got.Ready ||
		got.Draining != nil || got.ConnRequest != 3 || !got.Reused || got.ClientIP != "127.0.0.1" {
		t.Errorf("result = %+v, want %+v", got, want)
	}
	if e := recs[2].Event; e == nil || e.Type != zdv1.EventCordon || e.Object != "node/a" || e.Fields["k"] != "v" {
		t.Errorf("event = %+v", recs[2].Event)
	}
	if e := recs[3].End; e == nil || e.Results != 1 || e.Events != 1 || e.Error != "" {
		t.Errorf("end = %+v", recs[3].End)
	}
}

func TestReaderTolerance(t *testing.T) {
	meta := `{"kind":"meta","schema":"zerodrop.dev/runfile/v1","run_id":"x","created":"2025-01-01T00:00:00Z","scenario":{"name":"s","role":"assertion","criteria":{}}}`
	res := `{"kind":"result","seq":0,"id":"x-0","time":"2025-01-01T00:00:00Z","latency_ns":5,"status":200}`
	tests := []struct {
		name      string
		in        string
		wantKinds string
		truncated bool
		corrupt   Corrupt
	}{
		{name: "clean", in: meta + "\n" + res + "\n", wantKinds: "meta,result"},
		{name: "cut mid-line", in: meta + "\n" + res + "\n" + res[:30], wantKinds: "meta,result", truncated: true},
		{name: "complete last line without newline", in: meta + "\n" + res, wantKinds: "meta,result"},
		{name: "blank lines", in: meta + "\n\n" + res + "\n\n", wantKinds: "meta,result"},
		{name: "unknown kind skipped by callers", in: meta + "\n" + `{"kind":"future","x":1}` + "\n", wantKinds: "meta,future"},
		{name: "kind not first", in: `{"seq":1,"kind":"result","id":"a","time":"2025-01-01T00:00:00Z","status":503}` + "\n", wantKinds: "result"},
		{name: "corrupt middle line skipped, the rest kept", in: meta + "\n" + res[:30] + "\n" + res + "\n" + res + "\n",
			wantKinds: "meta,result,result", corrupt: Corrupt{Lines: 1, First: 2}},
		{name: "no kind", in: `{"a":1}` + "\n" + res + "\n", wantKinds: "result", corrupt: Corrupt{Lines: 1, First: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rd := NewReader(strings.NewReader(tc.in), "test")
			var kinds []string
			var err error
			for {
				var rec Record
				rec, err = rd.Next()
				if err != nil {
					break
				}
				kinds = append(kinds, rec.Kind)
			}
			if !errors.Is(err, io.EOF) {
				t.Fatalf("err = %v", err)
			}
			if got := strings.Join(kinds, ","); got != tc.wantKinds {
				t.Errorf("kinds = %s, want %s", got, tc.wantKinds)
			}
			if rd.Truncated() != tc.truncated {
				t.Errorf("truncated = %v, want %v", rd.Truncated(), tc.truncated)
			}
			got := rd.Corrupt()
			if got.Lines != tc.corrupt.Lines || got.First != tc.corrupt.First || (got.Lines > 0) != (got.FirstError != "") {
				t.Errorf("corrupt = %+v, want %+v with an error text", got, tc.corrupt)
			}
		})
	}
}

// TestReadFileKeepsWhatFollowsACorruptLine: a damaged line in the middle of a
// long file costs that line, not the thousands after it, and the digest is
// the file's.
func TestReadFileKeepsWhatFollowsACorruptLine(t *testing.T) {
	meta := `{"kind":"meta","schema":"zerodrop.dev/runfile/v1","run_id":"r"}`
	res := `{"kind":"result","seq":0,"id":"x-0","time":"2025-01-01T00:00:00Z","latency_ns":5,"status":200}`
	var b strings.Builder
	b.WriteString(meta + "\n")
	for i := 0; i < 4000; i++ {
		if i == 1000 {
			b.WriteString(res[:40] + "\x00garbage\n")
			continue
		}
		b.WriteString(res + "\n")
	}
	b.WriteString(`{"kind":"end","time":"2025-01-01T00:00:01Z","results":3999,"events":0}` + "\n")
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	results, ends := 0, 0
	st, err := ReadFile(path, func(r Record) error {
		if r.Result != nil {
			results++
		}
		if r.End != nil {
			ends++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if results != 3999 || ends != 1 || st.Corrupt.Lines != 1 || st.Corrupt.First != 1002 || st.Truncated {
		t.Errorf("results %d ends %d stats %+v; want 3999 results, the end line, line 1002 skipped", results, ends, st)
	}
	sum := sha256.Sum256([]byte(b.String()))
	if want := hex.EncodeToString(sum[:]); st.SHA256 != want {
		t.Errorf("digest %s, want %s", st.SHA256, want)
	}
	if d, err := Digest(path); err != nil || d != st.SHA256 {
		t.Errorf("Digest = %s, %v; want %s", d, err, st.SHA256)
	}
}

func TestConcurrentWriters(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, zdv1.Header{}, WithFlushInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	const producers, each = 8, 500
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var err error
				if p%2 == 0 {
					err = w.Result(zdv1.Result{Seq: uint64(p*each + i), ID: fmt.Sprint(p, "-", i), Time: time.Now(), Status: 200})
				} else {
					err = w.Event(zdv1.Event{Source: zdv1.SourceHarness, Type: zdv1.EventNote, Message: fmt.Sprint(p, "-", i)})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _ := readAll(t, &buf)
	var results, events int
	for _, r := range recs {
		switch r.Kind {
		case zdv1.KindResult:
			results++
		case zdv1.KindEvent:
			events++
			if r.Event.Time.IsZero() {
				t.Fatal("event time was not defaulted")
			}
		}
	}
	if results != producers/2*each || events != producers/2*each {
		t.Errorf("results=%d events=%d, want %d each", results, events, producers/2*each)
	}
	if end := recs[len(recs)-1].End; end == nil || end.Results != int64(results) || end.Events != int64(events) {
		t.Errorf("end line = %+v", recs[len(recs)-1])
	}
}

// A killed run keeps what was flushed: lines reach the file within the flush
// interval without Close.
func TestPeriodicFlushWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := Create(path, zdv1.Header{}, WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Result(zdv1.Result{ID: "a", Time: time.Now(), Status: 200}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		trunc, err := ReadFile(path, func(r Record) error {
			if r.Kind == zdv1.KindResult {
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && !trunc.Truncated {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("result line not on disk 5s after writing with a 20ms flush interval (results=%d truncated=%v)", n, trunc.Truncated)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWriterErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.jsonl")
	w, err := Create(path, zdv1.Header{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, zdv1.Header{}); err == nil || !errors.Is(err, os.ErrExist) {
		t.Errorf("second Create = %v, want ErrExist", err)
	}
	if err := w.Event(zdv1.Event{Source: zdv1.SourceHarness}); err == nil {
		t.Error("event without type accepted")
	}
	if err := w.CloseWithError(errors.New("load broke")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if err := w.Result(zdv1.Result{}); !errors.Is(err, ErrClosed) {
		t.Errorf("zdv1.Result after Close = %v, want ErrClosed", err)
	}
	var end *zdv1.End
	if _, err := ReadFile(path, func(r Record) error {
		if r.End != nil {
			end = r.End
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if end == nil || end.Error != "load broke" {
		t.Errorf("end = %+v, want error recorded", end)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteErrorIsSticky(t *testing.T) {
	w, err := NewWriter(&failWriter{n: 1}, zdv1.Header{}, WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Result(zdv1.Result{ID: "a"}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("zdv1.Result = %v, want disk full", err)
	}
	if err := w.Event(zdv1.Event{Source: "harness", Type: zdv1.EventNote}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("zdv1.Event after failure = %v, want the sticky disk full error", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after write failure returned nil")
	}
}

func TestFailureKind(t *testing.T) {
	tests := []struct {
		r    zdv1.Result
		want string
	}{
		{zdv1.Result{Status: 200}, ""},
		{zdv1.Result{Status: 204}, ""},
		{zdv1.Result{Status: 503}, "http-503"},
		{zdv1.Result{Status: 301}, "http-301"},
		{zdv1.Result{Class: zdv1.ClassRefused}, zdv1.ClassRefused},
		{zdv1.Result{}, zdv1.ClassOther},
	}
	for _, tc := range tests {
		if got := tc.r.FailureKind(); got != tc.want {
			t.Errorf("FailureKind(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestReadMeta(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.jsonl")
	w, err := Create(path, zdv1.Header{RunID: "m1", Scenario: zdv1.ScenarioSpec{Name: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadMeta(path)
	if err != nil || m.RunID != "m1" || m.Scenario.Name != "x" {
		t.Errorf("ReadMeta = %+v, %v", m, err)
	}
	_ = w.Close()
	empty := filepath.Join(dir, "empty.jsonl")
	_ = os.WriteFile(empty, nil, 0o644)
	noMeta := filepath.Join(dir, "nometa.jsonl")
	_ = os.WriteFile(noMeta, []byte(`{"kind":"event","time":"2025-01-01T00:00:00Z","source":"harness","type":"note"}`+"\n"), 0o644)
	for _, p := range []string{empty, noMeta, filepath.Join(dir, "missing.jsonl")} {
		if _, err := ReadMeta(p); err == nil {
			t.Errorf("ReadMeta(%s) succeeded", filepath.Base(p))
		}
	}
}

// FuzzReader: no input makes the reader panic or loop, and every record it
// returns has a kind.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"kind":"meta","schema":"zerodrop.dev/runfile/v1"}` + "\n" + `{"kind":"result","seq":1,"time":"2025-01-01T00:00:00Z"}` + "\n"))
	f.Add([]byte(`{"kind":"result","seq":`))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"kind":"event","time":"x"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := NewReader(bytes.NewReader(data), "fuzz")
		for i := 0; ; i++ {
			rec, err := rd.Next()
			if err != nil {
				return
			}
			if rec.Kind == "" || i > len(data) {
				t.Fatalf("record %d without kind or too many records: %+v", i, rec)
			}
		}
	})
}

func TestEventsAreRedacted(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, zdv1.Header{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	const token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWc"
	fields := map[string]string{"authorization": "Bearer " + token, "node": "w1"}
	if err := w.Event(zdv1.Event{Source: zdv1.SourceHarness, Type: zdv1.EventNote, Message: "kubectl said: Authorization: Bearer " + token, Fields: fields}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), token) || strings.Contains(buf.String(), token[:24]) {
		t.Errorf("run file keeps the token:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), `"node":"w1"`) {
		t.Errorf("harmless fields lost:\n%s", buf.String())
	}
	if fields["authorization"] != "Bearer "+token {
		t.Error("the caller's map was changed")
	}
}
