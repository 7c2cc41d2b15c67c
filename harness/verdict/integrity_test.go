package verdict

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// A run file read strictly: the end line's counts and the request numbers
// show a line taken out or copied in, and such a file cannot pass.
func TestRunFileIntegrity(t *testing.T) {
	unsent := func(n int) zdv1.Event {
		return zdv1.Event{Time: at(3010), Source: zdv1.SourceLoad, Type: zdv1.EventUnsent,
			Fields: map[string]string{"requests": fmt.Sprint(n)}}
	}
	// edit rewrites the run file's lines: keep says which stay, extra is
	// appended before the end line.
	type edit struct {
		drop      func(line string) bool
		duplicate func(line string) bool
	}
	isSeq := func(n int) func(string) bool {
		return func(l string) bool { return strings.Contains(l, fmt.Sprintf(`"seq":%d,`, n)) }
	}
	tests := []struct {
		name   string
		edit   edit
		events []zdv1.Event
		skip   func(ms int, r *zdv1.Result) *zdv1.Result
		want   []string // in the run reason; none: PASS
	}{
		{name: "as written", skip: keep},
		{name: "one result line removed", edit: edit{drop: isSeq(150)}, skip: keep,
			want: []string{"holds 299 result lines, but its end line says 300", "1 of the request numbers 0-299 are neither"}},
		{name: "eleven result lines copied in", skip: keep, edit: edit{duplicate: func(l string) bool {
			for n := 100; n < 111; n++ {
				if isSeq(n)(l) {
					return true
				}
			}
			return false
		}}, want: []string{"holds 311 result lines, but its end line says 300", "11 result lines repeat a request number"}},
		{name: "an event line removed", events: []zdv1.Event{{Time: at(1000), Source: zdv1.SourceHarness, Type: zdv1.EventNote, Message: "gone"}},
			edit: edit{drop: func(l string) bool { return strings.Contains(l, `"gone"`) }}, skip: keep,
			want: []string{"event lines, but its end line says"}},
		{name: "requests the generator says it never sent are no hole", events: []zdv1.Event{unsent(10)},
			skip: func(ms int, r *zdv1.Result) *zdv1.Result {
				if ms > 1000 && ms <= 1100 {
					return nil
				}
				return r
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs []zdv1.Result
			n := 0
			for _, r := range steadyRun(keep) {
				ms := int(r.Time.Sub(t0).Milliseconds())
				if p := tt.skip(ms, &r); p == nil {
					n++ // a number the generator used without sending
					continue
				}
				r.Seq = uint64(n)
				n++
				rs = append(rs, r)
			}
			path := writeRun(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: rs, events: loadEvents(tt.events...), numbered: true})
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range strings.SplitAfter(string(b), "\n") {
				if tt.edit.drop != nil && tt.edit.drop(l) {
					continue
				}
				out = append(out, l)
				if tt.edit.duplicate != nil && tt.edit.duplicate(l) {
					out = append(out, l)
				}
			}
			if err := os.WriteFile(path, []byte(strings.Join(out, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := AnalyzeFile(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.want) == 0 {
				// Whatever else it says (unsent requests are the load
				// check's), the run file itself is whole.
				for _, r := range sc.Verdict.Reasons {
					if r.Check == "run" && r.Status != zdv1.Pass {
						t.Fatalf("run reason %s: %s", r.Status, r.Message)
					}
				}
				return
			}
			if sc.Verdict.Status != zdv1.Error {
				t.Errorf("verdict %s, want ERROR", sc.Verdict.Status)
			}
			var msgs []string
			for _, r := range sc.Verdict.Reasons {
				if r.Check == "run" {
					msgs = append(msgs, r.Message)
				}
			}
			all := strings.Join(msgs, " | ")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("run reasons %q lack %q", all, w)
				}
			}
		})
	}
}
