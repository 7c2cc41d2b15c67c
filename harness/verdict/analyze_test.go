package verdict

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func ok(ms int, pod, node string) zdv1.Result {
	return zdv1.Result{Time: at(ms), Latency: time.Millisecond, Status: 200, Pod: pod, Node: node, ClientIP: "127.0.0.1", ConnRequest: 1}
}

func fail(ms int, class string) zdv1.Result {
	return zdv1.Result{Time: at(ms), Latency: 300 * time.Millisecond, Class: class, Error: class}
}

// failBetween edits a steadyRun: the requests sent from ms from until ms
// to fail with class.
func failBetween(from, to int, class string) func(int, *zdv1.Result) *zdv1.Result {
	return func(ms int, r *zdv1.Result) *zdv1.Result {
		if ms >= from && ms < to {
			f := fail(ms, class)
			return &f
		}
		return r
	}
}

func status(ms, code int) zdv1.Result {
	return zdv1.Result{Time: at(ms), Latency: time.Millisecond, Status: code}
}

type runSpec struct {
	crit    zdv1.Criteria
	results []zdv1.Result
	events  []zdv1.Event
	noEnd   bool
	endErr  error
	garbage string // appended after writing
	// numbered keeps the results' own request numbers (else each is its
	// index, as a run without unsent requests numbers them).
	numbered bool
}

func writeRun(t *testing.T, s runSpec) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := runfile.Create(path, zdv1.Header{
		Scenario: zdv1.ScenarioSpec{Name: "unit", Role: zdv1.RoleAssertion, Criteria: s.crit},
		Load:     &zdv1.LoadSettings{Targets: []string{"http://127.0.0.1:1/"}, Rate: 100},
	}, runfile.WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range s.results {
		if !s.numbered {
			r.Seq = uint64(i)
		}
		if err := w.Result(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range s.events {
		if err := w.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	if s.noEnd {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	} else if err := w.CloseWithError(s.endErr); err != nil {
		t.Fatal(err)
	}
	if s.garbage != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(s.garbage)
		_ = f.Close()
	}
	return path
}

func analyze(t *testing.T, s runSpec, opts ...Option) zdv1.Scenario {
	t.Helper()
	sc, err := AnalyzeFile(context.Background(), writeRun(t, s), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func reason(sc zdv1.Scenario, check string) *zdv1.Reason {
	for i := range sc.Verdict.Reasons {
		if sc.Verdict.Reasons[i].Check == check {
			return &sc.Verdict.Reasons[i]
		}
	}
	return nil
}

func TestFailureWindows(t *testing.T) {
	// Completion order differs from send order: the timeouts complete
	// last. Windows are by send time.
	var rs []zdv1.Result
	for ms := 0; ms < 3000; ms += 10 {
		switch {
		case ms >= 1000 && ms < 1200:
			rs = append(rs, ok(ms, "a", "n1")) // placeholder, replaced below
			rs[len(rs)-1] = fail(ms, zdv1.ClassTimeout)
		case ms >= 1500 && ms < 1600:
			rs = append(rs, status(ms, 503))
		case ms == 1250:
			rs = append(rs, ok(ms, "a", "n1"))
		default:
			rs = append(rs, ok(ms, "a", "n1"))
		}
	}
	// Move the timeouts to the end, as they would complete late.
	var early, late []zdv1.Result
	for _, r := range rs {
		if r.Class == zdv1.ClassTimeout {
			late = append(late, r)
		} else {
			early = append(early, r)
		}
	}
	rs = append(early, late...)
	events := []zdv1.Event{
		{Time: at(900), Source: zdv1.SourceHarness, Type: zdv1.EventCordon, Object: "node/n1"},
		{Time: at(1100), Source: zdv1.SourceKubernetes, Type: zdv1.EventEndpointRemoved, Object: "pod/ns/a"},
		{Time: at(2500), Source: zdv1.SourceHarness, Type: zdv1.EventUncordon, Object: "node/n1"},
	}

	tests := []struct {
		name    string
		gapMs   float64
		windows [][2]int // start, end ms
		failed  []int64
		okIn    []int64
	}{
		{name: "default gap merges both outages", gapMs: 0, windows: [][2]int{{1000, 1590}}, failed: []int64{30}, okIn: []int64{30}},
		{name: "small gap separates them", gapMs: 200, windows: [][2]int{{1000, 1190}, {1500, 1590}}, failed: []int64{20, 10}, okIn: []int64{0, 0}},
		{name: "gap just above spacing keeps each whole", gapMs: 11, windows: [][2]int{{1000, 1190}, {1500, 1590}}, failed: []int64{20, 10}, okIn: []int64{0, 0}},
		{name: "gap below spacing splits every failure", gapMs: 10, windows: nil, failed: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crit := zdv1.Criteria{MaxDropped: zdv1.Int64(0), WindowGapMs: tc.gapMs}
			sc := analyze(t, runSpec{crit: crit, results: rs, events: events})
			if sc.Results.Total != 300 || sc.Results.Dropped != 30 || sc.Results.Errors != 20 || sc.Results.Non2xx != 10 {
				t.Fatalf("totals = %+v", sc.Results)
			}
			if sc.Results.ErrorClasses[zdv1.ClassTimeout] != 20 || sc.Results.StatusCodes["503"] != 10 {
				t.Errorf("classes %v codes %v", sc.Results.ErrorClasses, sc.Results.StatusCodes)
			}
			if tc.windows == nil {
				if len(sc.FailureWindows) != 30 {
					t.Errorf("got %d windows, want one per failure (30)", len(sc.FailureWindows))
				}
				return
			}
			if len(sc.FailureWindows) != len(tc.windows) {
				t.Fatalf("got %d windows %+v, want %d", len(sc.FailureWindows), sc.FailureWindows, len(tc.windows))
			}
			for i, w := range sc.FailureWindows {
				if !w.Start.Equal(at(tc.windows[i][0])) || !w.End.Equal(at(tc.windows[i][1])) {
					t.Errorf("window %d = %s..%s, want %dms..%dms", i, w.Start, w.End, tc.windows[i][0], tc.windows[i][1])
				}
				if w.Failed != tc.failed[i] || w.OK != tc.okIn[i] {
					t.Errorf("window %d failed=%d ok=%d, want %d/%d", i, w.Failed, w.OK, tc.failed[i], tc.okIn[i])
				}
			}
			w0 := sc.FailureWindows[0]
			if w0.Classes[zdv1.ClassTimeout] != 20 {
				t.Errorf("window 0 classes %v", w0.Classes)
			}
			if len(w0.NearestEvents) == 0 || w0.NearestEvents[0].Type != zdv1.EventCordon || w0.NearestEvents[0].OffsetMs != -100 {
				t.Errorf("window 0 nearest events %+v, want the cordon at -100ms first", w0.NearestEvents)
			}
			if sc.Verdict.Status != zdv1.Fail {
				t.Errorf("verdict %s, want FAIL", sc.Verdict.Status)
			}
			r := reason(sc, "dropped")
			if r == nil || r.Status != zdv1.Fail || *r.Observed != 30 || len(r.Windows) != len(tc.windows) ||
				!strings.Contains(r.Message, "100 ms after harness cordon node/n1") {
				t.Errorf("dropped reason %+v", r)
			}
		})
	}
}

func TestAttributionAndCriteria(t *testing.T) {
	f, tr := false, true
	unready := func(ms, connReq int) zdv1.Result {
		r := ok(ms, "b", "n2")
		r.Ready, r.ConnRequest = &f, connReq
		return r
	}
	draining := func(ms, connReq int) zdv1.Result {
		r := ok(ms, "b", "n2")
		r.Draining, r.ConnRequest = &tr, connReq
		return r
	}
	other := ok(50, "a", "n1")
	other.ClientIP = "10.244.0.1"
	noPod := status(60, 200)
	rs := []zdv1.Result{
		ok(0, "a", "n1"), ok(10, "a", "n1"), ok(20, "a", "n1"), ok(30, "b", "n2"),
		unready(40, 1), unready(41, 2), unready(42, 3), draining(43, 7),
		other, noPod,
	}
	tests := []struct {
		name   string
		crit   zdv1.Criteria
		want   zdv1.Status
		checks map[string]zdv1.Status
	}{
		{
			name: "everything checked",
			crit: zdv1.Criteria{
				MaxDropped: zdv1.Int64(0), ExpectedClientIP: "127.0.0.1",
				ExpectedPods: []string{"a", "b", "c"}, RequireAllPodsServed: true,
				MinPodShare: zdv1.Float64(0.3), MaxServedUnready: zdv1.Int64(0), MaxServedDraining: zdv1.Int64(1),
				MaxP99Ms: zdv1.Float64(5),
			},
			want: zdv1.Fail,
			checks: map[string]zdv1.Status{
				"run": zdv1.Pass, "dropped": zdv1.Pass, "client-ip": zdv1.Fail, "pods-served": zdv1.Fail,
				"pod-share": zdv1.Fail, "served-unready": zdv1.Fail, "served-draining": zdv1.Pass, "p99": zdv1.Pass,
			},
		},
		{
			name:   "lenient criteria pass",
			crit:   zdv1.Criteria{MaxDropped: zdv1.Int64(0), ExpectedPods: []string{"a", "b"}, RequireAllPodsServed: true, MaxServedUnready: zdv1.Int64(3), ForbiddenClientIP: "192.0.2.1"},
			want:   zdv1.Pass,
			checks: map[string]zdv1.Status{"pods-served": zdv1.Pass, "served-unready": zdv1.Pass, "forbidden-client-ip": zdv1.Pass},
		},
		{
			name:   "forbidden IP seen",
			crit:   zdv1.Criteria{ForbiddenClientIP: "10.244.0.1"},
			want:   zdv1.Fail,
			checks: map[string]zdv1.Status{"forbidden-client-ip": zdv1.Fail},
		},
		{
			name:   "all pods served without expected pods is a setup error",
			crit:   zdv1.Criteria{RequireAllPodsServed: true},
			want:   zdv1.Error,
			checks: map[string]zdv1.Status{"pods-served": zdv1.Error},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := analyze(t, runSpec{crit: tc.crit, results: rs})
			res := sc.Results
			if res.OK != 10 || res.Unattributed != 1 || res.ServedUnready != 3 || res.ServedUnreadyReused != 2 ||
				res.ServedDraining != 1 || res.ServedDrainingReused != 1 {
				t.Errorf("results = %+v", res)
			}
			if len(res.Nodes) != 2 || res.Nodes[0].Name != "n1" || res.Nodes[0].Count != 4 || res.Nodes[1].Count != 5 {
				t.Errorf("nodes = %+v", res.Nodes)
			}
			pods := map[string]zdv1.PodCount{}
			for _, p := range res.Pods {
				pods[p.Pod] = p
			}
			if pods["a"].Count != 4 || pods["b"].Count != 5 || pods["b"].ServedUnready != 3 || pods["a"].Node != "n1" ||
				pods["a"].Share < 0.44 || pods["a"].Share > 0.45 {
				t.Errorf("pods = %+v", res.Pods)
			}
			if len(tc.crit.ExpectedPods) == 3 && (len(res.ZeroTrafficPods) != 1 || res.ZeroTrafficPods[0] != "c") {
				t.Errorf("zero-traffic pods = %v, want [c]", res.ZeroTrafficPods)
			}
			if tc.crit.ExpectedClientIP != "" && res.ClientIPMismatches != 1 {
				t.Errorf("client IP mismatches = %d, want 1", res.ClientIPMismatches)
			}
			if sc.Verdict.Status != tc.want {
				t.Errorf("verdict %s, want %s: %+v", sc.Verdict.Status, tc.want, sc.Verdict.Reasons)
			}
			for check, want := range tc.checks {
				r := reason(sc, check)
				if r == nil || r.Status != want {
					t.Errorf("reason %s = %+v, want status %s", check, r, want)
				}
			}
		})
	}
}

func TestBrokenRuns(t *testing.T) {
	good := []zdv1.Result{ok(0, "a", "n"), ok(10, "a", "n")}
	tests := []struct {
		name string
		spec runSpec
		want string
	}{
		{"killed: no end line", runSpec{results: good, noEnd: true}, "no end line"},
		{"killed mid-line", runSpec{results: good, noEnd: true, garbage: `{"kind":"result","seq":9,"ti`}, "cut off"},
		{"load reported an error", runSpec{results: good, endErr: errors.New("sink full")}, "sink full"},
		{"no results", runSpec{}, "only 0 results"},
		{"too few results", runSpec{results: good, crit: zdv1.Criteria{MinRequests: 10}}, "only 2 results"},
		{"corrupt line", runSpec{results: good, garbage: "not json\n"}, "could not be read and were skipped"},
		{"target never answered", runSpec{results: []zdv1.Result{fail(0, zdv1.ClassRefused), fail(10, zdv1.ClassRefused), fail(20, zdv1.ClassTimeout)}},
			"never answered: none of 3 requests got an HTTP response (refused 2, timeout 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := analyze(t, tc.spec)
			if sc.Verdict.Status != zdv1.Error {
				t.Fatalf("verdict %s, want ERROR: %+v", sc.Verdict.Status, sc.Verdict.Reasons)
			}
			r := reason(sc, "run")
			if r == nil || r.Status != zdv1.Error || !strings.Contains(r.Message, tc.want) {
				t.Errorf("run reason %+v, want ERROR mentioning %q", r, tc.want)
			}
		})
	}
	// Numbers survive a killed run.
	sc := analyze(t, runSpec{results: good, noEnd: true, garbage: `{"kind":"res`})
	if sc.Results.Total != 2 || sc.Name != "unit" {
		t.Errorf("killed run kept %d results, name %q", sc.Results.Total, sc.Name)
	}
	if _, err := AnalyzeFile(context.Background(), filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Error("missing run file gave no error")
	}
}

func TestCriteriaOverrideAndEvents(t *testing.T) {
	rs := []zdv1.Result{ok(0, "a", "n"), status(10, 500)}
	var evs []zdv1.Event
	for i := range 5 {
		evs = append(evs, zdv1.Event{Time: at(i), Source: zdv1.SourceHarness, Type: zdv1.EventNote})
	}
	sc := analyze(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: rs, events: evs},
		WithOverrides(zdv1.Criteria{MaxDropped: zdv1.Int64(1)}), WithMaxEvents(3))
	if sc.Verdict.Status != zdv1.Pass || *sc.Criteria.MaxDropped != 1 {
		t.Errorf("override not applied: %s %+v", sc.Verdict.Status, sc.Criteria)
	}
	if len(sc.Events) != 3 || sc.EventsOmitted != 2 {
		t.Errorf("events %d omitted %d, want 3 and 2", len(sc.Events), sc.EventsOmitted)
	}
	if sc.Results.LatencyOK.Count != 1 || sc.Results.Latency.Count != 2 || sc.Results.Latency.MaxMs != 1 {
		t.Errorf("latency = %+v / %+v", sc.Results.Latency, sc.Results.LatencyOK)
	}
}

func TestBuildReport(t *testing.T) {
	var steady []zdv1.Result // 100/s for 5 s, as the header's rate says
	for ms := 10; ms <= 5000; ms += 10 {
		steady = append(steady, ok(ms, "a", "n"))
	}
	pass := writeRun(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: steady})
	failing := writeRun(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: []zdv1.Result{ok(0, "a", "n"), status(10, 503)}})
	rep, err := BuildReport(context.Background(), zdv1.RunMeta{Provider: "none"}, []string{pass, failing})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 2 || rep.Summary.Status != zdv1.Fail || rep.Summary.Passed != 1 || rep.Summary.Failed != 1 {
		t.Errorf("summary = %+v", rep.Summary)
	}
	if !rep.Run.Start.Equal(t0) || rep.Run.End.Before(rep.Run.Start) || rep.Validate() != nil {
		t.Errorf("run = %+v, validate %v", rep.Run, rep.Validate())
	}
	if _, err := BuildReport(context.Background(), zdv1.RunMeta{}, []string{filepath.Join(t.TempDir(), "nope.jsonl")}); err == nil {
		t.Error("missing run file gave no error")
	}
}

// Behind an HTTP proxy the Pod's peer is the proxy and the client's
// address is an entry of X-Forwarded-For, wherever the proxy put it; an
// answer without the header, or without the client in it, fails the check,
// and the report counts the headers it saw.
func TestForwardedClientIP(t *testing.T) {
	const client, proxy = "172.19.0.1", "172.19.0.6"
	behind := func(ms int, xff string) zdv1.Result {
		r := ok(ms, "a", "n1")
		r.ClientIP, r.ForwardedFor = proxy, xff
		return r
	}
	tests := []struct {
		name       string
		results    []zdv1.Result
		want       zdv1.Status
		mismatches int64
	}{
		{"the proxy appends the client", []zdv1.Result{behind(0, client), behind(10, client)}, zdv1.Pass, 0},
		{"client, then the LB's own address", []zdv1.Result{behind(0, client+", 34.120.0.9"), behind(10, "203.0.113.5,"+client)}, zdv1.Pass, 0},
		{"an answer without the header", []zdv1.Result{behind(0, client), behind(10, "")}, zdv1.Fail, 1},
		{"another client, or a prefix of ours", []zdv1.Result{behind(0, "172.19.0.10"), behind(10, client)}, zdv1.Fail, 1},
		{"nothing attributed", []zdv1.Result{status(0, 502)}, zdv1.Fail, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := analyze(t, runSpec{crit: zdv1.Criteria{ForwardedClientIP: client, ForbiddenClientIP: client}, results: tc.results})
			r := reason(sc, "forwarded-client-ip")
			if r == nil || r.Status != tc.want {
				t.Fatalf("reason %+v, want status %s", r, tc.want)
			}
			if sc.Results.ForwardedMismatches != tc.mismatches || sc.Results.ForwardedClientIP != client {
				t.Errorf("mismatches %d (want %d), expected %q", sc.Results.ForwardedMismatches, tc.mismatches, sc.Results.ForwardedClientIP)
			}
			if f := reason(sc, "forbidden-client-ip"); f == nil || f.Status != zdv1.Pass {
				t.Errorf("forbidden-client-ip %+v: the Pod's peer is the proxy, never the client", f)
			}
		})
	}
	sc := analyze(t, runSpec{crit: zdv1.Criteria{}, results: []zdv1.Result{behind(0, client), behind(1, client), behind(2, "")}})
	if got := sc.Results.ForwardedFor; len(got) != 1 || got[0].Name != client || got[0].Count != 2 {
		t.Errorf("forwardedFor %+v, want %s counted twice", got, client)
	}
	if reason(sc, "forwarded-client-ip") != nil {
		t.Error("a check of X-Forwarded-For without the criterion")
	}
}

// A window whose failures last until the run's last request was still
// open when the load stopped: its length is a lower bound, and the report
// must say so; one the run saw close is not.
func TestWindowOpenAtTheEnd(t *testing.T) {
	tests := []struct {
		name     string
		failFrom int
		failTo   int
		want     bool
	}{
		{"failing to the last request", 2000, 3000, true},
		{"closed before the end", 1000, 1500, false},
		{"the last request alone", 2990, 3000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rs []zdv1.Result
			for ms := 0; ms < 3000; ms += 10 {
				if ms >= tc.failFrom && ms < tc.failTo {
					rs = append(rs, fail(ms, zdv1.ClassTimeout))
				} else {
					rs = append(rs, ok(ms, "a", "n1"))
				}
			}
			// The last timeouts complete after answers sent later would.
			rs = append(rs[len(rs)/2:], rs[:len(rs)/2]...)
			sc := analyze(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: rs})
			if len(sc.FailureWindows) != 1 {
				t.Fatalf("windows %+v, want one", sc.FailureWindows)
			}
			if got := sc.FailureWindows[0].OpenAtEnd; got != tc.want {
				t.Errorf("open at the end %v, want %v (window %v to %v)", got, tc.want, sc.FailureWindows[0].Start, sc.FailureWindows[0].End)
			}
		})
	}
}
