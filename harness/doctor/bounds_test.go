package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// svcDoc is one small Service document.
func svcDoc(i int) string {
	return fmt.Sprintf("---\napiVersion: v1\nkind: Service\nmetadata: {name: s%d}\nspec: {type: ClusterIP}\n", i)
}

// docs is n Service documents.
func docs(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(svcDoc(i))
	}
	return b.String()
}

// countingReader serves data and then, when endless, more of it forever,
// and counts what it served.
type countingReader struct {
	data    string
	endless bool
	off     int
	served  int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		if !r.endless {
			return 0, io.EOF
		}
		r.off = 0
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	r.served += int64(n)
	return n, nil
}

// TestStdinInRunBudget: stdin gets what the files leave of the run's
// budget and the file cap, and is refused the moment it crosses, before
// any of it is parsed; under the budget it is read as before.
func TestStdinInRunBudget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(file, []byte(docs(5)), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	fileSize := st.Size()
	// A file the parser would refuse: the budget is judged before it is.
	brokenFile := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(brokenFile, []byte("---\na: b: c\n"+docs(4)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A first document the parser would refuse at line 2: a size error
	// instead shows the budget was judged before any parsing.
	broken := "---\na: b: c\n"
	cases := []struct {
		name    string
		paths   []string
		stdin   string
		endless bool
		lim     Limits
		want    string // "" ok, else a substring of the error
		objects int    // with want "": objects read
	}{
		{name: "stdin alone under the caps", paths: []string{"-"}, stdin: docs(3), lim: Limits{FileSize: 4096, InputSize: 4096, Objects: 100}, objects: 3},
		{name: "stdin over the file cap", paths: []string{"-"}, stdin: broken + docs(100), lim: Limits{FileSize: 1024, InputSize: 1 << 20, Objects: 1000},
			want: "larger than 1024 bytes"},
		{name: "endless stdin stops at the cap", paths: []string{"-"}, stdin: broken + docs(10), endless: true, lim: Limits{FileSize: 1024, InputSize: 1 << 20, Objects: 1000},
			want: "larger than 1024 bytes"},
		{name: "files and stdin within the run budget", paths: []string{file, "-"}, stdin: docs(2), lim: Limits{FileSize: 4096, InputSize: fileSize + int64(len(docs(2))), Objects: 100},
			objects: 7},
		{name: "stdin takes the run past its budget", paths: []string{file, "-"}, stdin: broken + docs(2), lim: Limits{FileSize: 4096, InputSize: fileSize + 50, Objects: 100},
			want: fmt.Sprintf("more than the 50 bytes left of the %d bytes one run reads (the other inputs hold %d bytes)", fileSize+50, fileSize)},
		{name: "a file before stdin is not parsed first", paths: []string{brokenFile, "-"}, stdin: docs(2), lim: Limits{FileSize: 4096, InputSize: fileSize + 50, Objects: 100},
			want: "bytes left of the"},
		{name: "stdin first, the files measured still count", paths: []string{"-", file}, stdin: broken + docs(2), lim: Limits{FileSize: 4096, InputSize: fileSize + 50, Objects: 100},
			want: "more than the 50 bytes left"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &countingReader{data: c.stdin, endless: c.endless}
			m, err := LoadContext(context.Background(), c.paths, r, c.lim)
			if c.want == "" {
				if err != nil || len(m.Objects)+len(m.Skipped) != c.objects {
					t.Fatalf("err = %v, %d objects; want %d", err, len(m.Objects)+len(m.Skipped), c.objects)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.File != StdinName || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want an InputError on %s mentioning %q", err, StdinName, c.want)
			}
			// Stopped at the crossing: no more than a read's chunk past it.
			if r.served > c.lim.FileSize+64<<10 {
				t.Errorf("read %d bytes of stdin with a cap of %d", r.served, c.lim.FileSize)
			}
		})
	}
}

// TestObjectCapBeforeParsing: an input of more documents than the cap is
// refused at the document that crosses it, before any is decoded (its
// first document, which the parser would refuse at line 2, is not
// reached); empty and null documents, which parse skips, do not count; List
// items are still counted as they are decoded.
func TestObjectCapBeforeParsing(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := func(s string) int { return strings.Count(s, "\n") }
	broken := "---\na: b: c\n"
	nulls := "---\n# only a comment\n---\n~\n--- ~\n---\n!!null ''\n--- &a null # named\n...\n---\n\n"
	list := "apiVersion: v1\nkind: List\nitems:\n" + strings.Repeat("- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n", 6)
	cases := []struct {
		name, body string
		cap        int
		wantLine   int    // >0: refused at this line
		want       string // substring of the error
		objects    int    // refused: 0
	}{
		{name: "one over the cap, first document broken", body: broken + docs(5), cap: 5, wantLine: lines(broken+docs(5)) - 3,
			want: "more than 5 objects"},
		{name: "at the cap", body: docs(5), cap: 5, objects: 5},
		{name: "at the cap with a byte order mark", body: "\ufeff" + docs(5), cap: 5, objects: 5},
		{name: "null and empty documents do not count", body: nulls + docs(5) + nulls, cap: 5, objects: 5},
		{name: "a document after the end marker counts", body: "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n...\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
			cap: 1, wantLine: 5, want: "more than 1 objects"},
		{name: "list items counted while decoding", body: list, cap: 5, wantLine: 8, want: "more than 5 objects"},
		{name: "a long line is one line", body: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: " + strings.Repeat("x", 200<<10) + "}\n" + docs(1),
			cap: 1, wantLine: 6, want: "more than 1 objects"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := Limits{FileSize: 1 << 20, InputSize: 1 << 20, Objects: c.cap}
			for _, via := range []string{"file", "stdin"} {
				var m *Manifests
				var err error
				if via == "file" {
					m, err = LoadContext(context.Background(), []string{write("in.yaml", c.body)}, nil, lim)
				} else {
					m, err = LoadContext(context.Background(), []string{"-"}, strings.NewReader(c.body), lim)
				}
				if c.want == "" {
					if err != nil || len(m.Objects)+len(m.Skipped) != c.objects {
						t.Errorf("%s: err = %v, %d objects; want %d", via, err, len(m.Objects)+len(m.Skipped), c.objects)
					}
					continue
				}
				var ie *InputError
				if !errors.As(err, &ie) || ie.Line != c.wantLine || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: err = %v, want line %d and %q", via, err, c.wantLine, c.want)
				}
			}
		})
	}
}

// TestObjectCapBeforeAnyParsing: every input's documents are counted
// before the first is parsed, so one over the cap is refused even after
// an input the parser would refuse.
func TestObjectCapBeforeAnyParsing(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	if err := os.WriteFile(first, []byte("---\na: b: c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, []byte(docs(4)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadContext(context.Background(), []string{first, second}, nil, Limits{FileSize: 4096, InputSize: 8192, Objects: 3})
	var ie *InputError
	if !errors.As(err, &ie) || ie.File != second || !strings.Contains(err.Error(), "more than 3 objects") {
		t.Errorf("err = %v, want the object cap on %s", err, second)
	}
}

// TestLoadStopsWhenCancelled: a read blocked on stdin, or one that has not
// started, ends with the context's error instead of waiting for the input.
func TestLoadStopsWhenCancelled(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := LoadContext(ctx, []string{"-"}, pr, DefaultLimits())
		done <- err
	}()
	// Half an input, then nothing: the reader blocks.
	if _, err := pw.Write([]byte(svcDoc(0))); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		var ie *InputError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &ie) || ie.File != StdinName {
			t.Errorf("err = %v, want context.Canceled on %s", err, StdinName)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadContext still reading stdin after its context was cancelled")
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(p, []byte(docs(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadContext(ctx, []string{p}, nil, DefaultLimits()); !errors.Is(err, context.Canceled) {
		t.Errorf("file with a cancelled context: err = %v, want context.Canceled", err)
	}
}

// TestPipeInRunBudget: a pipe named as a file (process substitution,
// /dev/stdin) cannot be measured first; it is read as stdin is, within
// what the run's budget leaves.
func TestPipeInRunBudget(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	body := docs(4)
	for _, c := range []struct {
		name string
		lim  Limits
		want string
	}{
		{"within", Limits{FileSize: 4096, InputSize: 4096, Objects: 10}, ""},
		{"past the run's budget", Limits{FileSize: 4096, InputSize: int64(len(body)) - 1, Objects: 10}, "left of the"},
		{"past the file cap", Limits{FileSize: int64(len(body)) - 1, InputSize: 4096, Objects: 10}, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			go func() {
				f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				defer f.Close()
				_, _ = f.WriteString(body)
			}()
			m, err := LoadContext(context.Background(), []string{fifo}, nil, c.lim)
			if c.want == "" {
				if err != nil || len(m.Objects)+len(m.Skipped) != 4 {
					t.Fatalf("err = %v; want 4 objects", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
