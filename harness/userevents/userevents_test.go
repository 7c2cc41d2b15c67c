package userevents

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := time.Date(2026, 1, 2, 3, 4, 1, 500_000_000, time.UTC)
	tests := []struct {
		name    string
		line    string
		want    zdv1.Event
		skip    bool
		wantErr string
	}{
		{name: "blank", line: "   ", skip: true},
		{name: "comment", line: "# drained by hand", skip: true},
		{name: "plain text is an action", line: "  kubectl drain node-1 \r",
			want: zdv1.Event{Time: now, Source: zdv1.SourceUser, Type: zdv1.EventAction, Message: "kubectl drain node-1"}},
		{name: "json with every key", line: `{"type":"pod-unready","object":"pod/ns/a","message":"readiness off","time":"2026-01-02T03:04:01.5Z","fields":{"pod":"a"}}`,
			want: zdv1.Event{Time: at, Source: zdv1.SourceUser, Type: zdv1.EventPodUnready, Object: "pod/ns/a", Message: "readiness off", Fields: map[string]string{"pod": "a"}}},
		{name: "json type only", line: `{"type":"sigstop"}`,
			want: zdv1.Event{Time: now, Source: zdv1.SourceUser, Type: "sigstop"}},
		{name: "json message only defaults to action", line: `{"message":"helm upgrade"}`,
			want: zdv1.Event{Time: now, Source: zdv1.SourceUser, Type: zdv1.EventAction, Message: "helm upgrade"}},
		{name: "broken json", line: `{"type":"x"`, wantErr: "not a JSON event"},
		{name: "unknown key", line: `{"type":"x","mesage":"typo"}`, wantErr: `unknown field "mesage"`},
		{name: "source cannot be set", line: `{"type":"x","source":"harness"}`, wantErr: `unknown field "source"`},
		{name: "two objects", line: `{"type":"x"} {"type":"y"}`, wantErr: "text after the object"},
		{name: "upper-case type", line: `{"type":"Drain"}`, wantErr: `type "Drain"`},
		{name: "type with spaces", line: `{"type":"my action"}`, wantErr: `type "my action"`},
		{name: "verdict's own type", line: `{"type":"load-stop"}`, wantErr: "which the verdict reads"},
		{name: "criteria refused", line: `{"type":"criteria","fields":{"criteria":"{}"}}`, wantErr: "which the verdict reads"},
		{name: "empty object", line: `{}`, wantErr: "says nothing"},
		{name: "bad time", line: `{"type":"x","time":"yesterday"}`, wantErr: "not a JSON event"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Parse(tc.line, now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error %v, want one containing %q", tc.line, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.line, err)
			}
			if ok == tc.skip {
				t.Fatalf("Parse(%q) ok=%v, want %v", tc.line, ok, !tc.skip)
			}
			if tc.skip {
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tc.line, got, tc.want)
			}
		})
	}
}

// recorder is an EventSink that keeps what it got.
type recorder struct {
	mu     sync.Mutex
	events []zdv1.Event
	got    chan struct{}
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 100)} }

func (r *recorder) Event(e zdv1.Event) error {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	r.got <- struct{}{}
	return nil
}

func (r *recorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Type+":"+e.Message)
	}
	return out
}

// wait blocks until n events arrived or fails the test after 5 s.
func (r *recorder) wait(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-r.got:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d events arrived within 5s: %v", i, n, r.messages())
		}
	}
}

type badLine struct {
	n    int
	text string
	err  string
}

func TestFollow(t *testing.T) {
	tests := []struct {
		name string
		fifo bool
	}{{name: "regular file"}, {name: "fifo", fifo: true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events")
			var write func(s string)
			if tc.fifo {
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				// Each write opens and closes the FIFO, like `echo > fifo`:
				// a writer going away must not end the input.
				write = func(s string) {
					f, err := os.OpenFile(path, os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.WriteString(s); err != nil {
						t.Fatal(err)
					}
					_ = f.Close()
				}
			} else {
				if err := os.WriteFile(path, []byte("before the run\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				write = func(s string) {
					f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.WriteString(s); err != nil {
						t.Fatal(err)
					}
					_ = f.Close()
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := newRecorder()
			var mu sync.Mutex
			var bad []badLine
			type result struct {
				st  Stats
				err error
			}
			done := make(chan result, 1)
			go func() {
				st, err := Follow(ctx, path, rec, Options{Poll: 10 * time.Millisecond, OnBad: func(n int, text string, err error) {
					mu.Lock()
					bad = append(bad, badLine{n, text, err.Error()})
					mu.Unlock()
				}})
				done <- result{st, err}
			}()
			want := []string{}
			if !tc.fifo {
				rec.wait(t, 1)
				want = append(want, "action:before the run")
			}
			write("first action\n")
			rec.wait(t, 1)
			// A bad line between good ones is reported and skipped.
			write(`{"type":"load-start"}` + "\n" + `{"type":"pod-unready","message":"m"}` + "\n")
			rec.wait(t, 1)
			// A line written in two pieces is one event.
			write("half a ")
			time.Sleep(30 * time.Millisecond)
			write("line\n# comment\n")
			rec.wait(t, 1)
			// The last line, without its newline, still counts once the run ends.
			write("no newline at the end")
			time.Sleep(50 * time.Millisecond)
			cancel()
			var res result
			select {
			case res = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Follow did not return within 5s of the run's end")
			}
			if res.err != nil {
				t.Fatal(res.err)
			}
			want = append(want, "action:first action", "pod-unready:m", "action:half a line", "action:no newline at the end")
			if got := rec.messages(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("events\n got %q\nwant %q", got, want)
			}
			if res.st.Events != len(want) || res.st.Bad != 1 {
				t.Errorf("stats %+v, want %d events and 1 bad line", res.st, len(want))
			}
			wantLine := 2
			if !tc.fifo {
				wantLine = 3
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bad) != 1 || bad[0].n != wantLine || !strings.Contains(bad[0].err, "verdict reads") || bad[0].text != `{"type":"load-start"}` {
				t.Errorf("bad lines %+v, want line %d refused as a type the verdict reads", bad, wantLine)
			}
			for _, e := range rec.events {
				if e.Source != zdv1.SourceUser || e.Time.IsZero() {
					t.Errorf("event %+v: want source user and a time", e)
				}
			}
		})
	}
}

func TestFollowLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events")
	data := "ok 1\n" + strings.Repeat("x", MaxLineBytes+10) + "\nok 2\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec := newRecorder()
	var badN []int
	done := make(chan Stats, 1)
	go func() {
		st, err := Follow(ctx, path, rec, Options{Poll: 10 * time.Millisecond, OnBad: func(n int, _ string, _ error) { badN = append(badN, n) }})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	rec.wait(t, 2)
	cancel()
	st := <-done
	if got := strings.Join(rec.messages(), "|"); got != "action:ok 1|action:ok 2" || st.Bad != 1 || len(badN) != 1 || badN[0] != 2 {
		t.Errorf("events %q, bad lines %v (stats %+v); want ok 1, ok 2 and line 2 skipped", got, badN, st)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, path, wantErr string
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"directory", dir, "neither a regular file nor a FIFO"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Open(tc.path)
			if err == nil {
				_ = src.Close()
				t.Fatalf("Open(%s) succeeded, want an error", tc.path)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open(%s): %v, want %q", tc.path, err, tc.wantErr)
			}
		})
	}
}
