package render

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	stdhtml "html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/reports/render/rendertest"
)

// shared holds the two sample runs, written once for the package's tests:
// they only read them.
var shared struct {
	once sync.Once
	root string
	dirs []string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.root != "" {
		_ = os.RemoveAll(shared.root)
	}
	os.Exit(code)
}

// twoRuns returns two suite runs on different Kubernetes versions: in the
// second, drain-node passes and source-ip lost its run file. They are
// written once and must not be modified.
func twoRuns(t *testing.T) (root string, dirs []string) {
	t.Helper()
	shared.once.Do(func() {
		shared.root, shared.err = os.MkdirTemp("", "zerodrop-render-")
		if shared.err == nil {
			shared.dirs = writeTwoRuns(t, shared.root)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	if len(shared.dirs) != 2 {
		t.Fatal("writing the sample runs failed in an earlier test")
	}
	return shared.root, shared.dirs
}

func writeTwoRuns(t *testing.T, root string) []string {
	t.Helper()
	a := filepath.Join(root, "kind-v1.34.2")
	b := filepath.Join(root, "kind-v1.33.4")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rendertest.WriteRun(t, a, rendertest.Env{Provider: "kind", Kubernetes: "v1.34.2", LB: "metallb"}, rendertest.Standard())
	cs := rendertest.Standard()
	cs[2].Outages = nil
	cs[3].NoRunFile = true
	rendertest.WriteRun(t, b, rendertest.Env{Provider: "kind", Kubernetes: "v1.33.4", LB: "metallb"}, cs)
	return []string{a, b}
}

func renderAll(t *testing.T, runs []*Run, outDir string) (md, html, junit string) {
	t.Helper()
	var m, h, j bytes.Buffer
	if err := Markdown(&m, runs, MarkdownOptions{OutDir: outDir, HTMLName: HTMLFileName}); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&h, runs, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := JUnit(&j, runs); err != nil {
		t.Fatal(err)
	}
	return m.String(), h.String(), j.String()
}

func TestTimelineAgreesWithReport(t *testing.T) {
	_, dirs := twoRuns(t)
	runs, err := Load(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range runs[0].Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			tl := sc.Timeline
			if tl == nil {
				t.Fatalf("no timeline: %s", sc.TimelineNote)
			}
			if tl.Results != sc.Results.Total {
				t.Errorf("timeline read %d results, report has %d", tl.Results, sc.Results.Total)
			}
			if got := sum(tl.OK); got != sc.Results.OK {
				t.Errorf("timeline ok = %d, report ok = %d", got, sc.Results.OK)
			}
			var failed int64
			for i, c := range tl.Classes {
				n := sum(tl.Failed[i])
				failed += n
				want := sc.Results.ErrorClasses[c]
				if code, ok := strings.CutPrefix(c, "http-"); ok {
					want = sc.Results.StatusCodes[code]
				}
				if n != want {
					t.Errorf("class %s: timeline %d, report %d", c, n, want)
				}
			}
			if failed != sc.Results.Dropped {
				t.Errorf("timeline failed = %d, report dropped = %d", failed, sc.Results.Dropped)
			}
			var podOK int64
			for _, p := range tl.PodOK {
				podOK += sum(p)
			}
			if podOK != sc.Results.OK-sc.Results.Unattributed {
				t.Errorf("per-pod ok = %d, want %d", podOK, sc.Results.OK-sc.Results.Unattributed)
			}
			if got := sum(tl.ServedUnready); got != sc.Results.ServedUnready {
				t.Errorf("timeline served-unready = %d, report %d", got, sc.Results.ServedUnready)
			}
			if got := sum(tl.ServedDraining); got != sc.Results.ServedDraining {
				t.Errorf("timeline served-draining = %d, report %d", got, sc.Results.ServedDraining)
			}
			if got := sum(tl.Latency.Count); got != sc.Results.Latency.Count {
				t.Errorf("timeline latency count = %d, report %d", got, sc.Results.Latency.Count)
			}
			var maxMs float64
			for i, n := range tl.Latency.Count {
				maxMs = max(maxMs, tl.Latency.MaxMs[i])
				if n > 0 && (tl.Latency.P50Ms[i] > tl.Latency.P99Ms[i] || tl.Latency.P99Ms[i] > tl.Latency.MaxMs[i]) {
					t.Errorf("bucket %d: p50 %v, p99 %v, max %v out of order", i, tl.Latency.P50Ms[i], tl.Latency.P99Ms[i], tl.Latency.MaxMs[i])
				}
			}
			if maxMs != sc.Results.Latency.MaxMs {
				t.Errorf("timeline max latency %v ms, report %v ms", maxMs, sc.Results.Latency.MaxMs)
			}
			if n := tl.Buckets(); n > DefaultMaxBuckets || n < 10 {
				t.Errorf("%d buckets, want 10..%d", n, DefaultMaxBuckets)
			}
			if tl.Start.After(sc.Results.FirstSend) || !tl.End().After(sc.Results.LastSend) {
				t.Errorf("buckets [%v, %v) do not cover the sends [%v, %v]", tl.Start, tl.End(), sc.Results.FirstSend, sc.Results.LastSend)
			}
			var markers int
			for _, e := range sc.Events {
				if drawnEvent(e.Type) {
					markers++
				}
			}
			if len(tl.Markers)+tl.EventsOutside != markers {
				t.Errorf("%d markers + %d outside, want %d marker events", len(tl.Markers), tl.EventsOutside, markers)
			}
		})
	}
}

func TestChooseStep(t *testing.T) {
	tests := []struct {
		span time.Duration
		rate float64
		max  int
		want time.Duration
	}{
		{40 * time.Second, 50, 600, 500 * time.Millisecond}, // 25 requests per bucket
		{60 * time.Second, 500, 600, 200 * time.Millisecond},
		{60 * time.Second, 0, 600, 200 * time.Millisecond},
		{10 * time.Minute, 1000, 600, 2 * time.Second},
		{3 * time.Hour, 1000, 600, 30 * time.Second},
		{2 * time.Second, 5, 600, time.Second}, // slow load: whole seconds at least
		{1000 * time.Hour, 1, 600, 2 * time.Hour},
	}
	for _, tc := range tests {
		got := chooseStep(tc.span, tc.rate, tc.max)
		if got != tc.want {
			t.Errorf("chooseStep(%v, %v, %d) = %v, want %v", tc.span, tc.rate, tc.max, got, tc.want)
		}
		if n := int(tc.span/got) + 2; n > tc.max {
			t.Errorf("chooseStep(%v) gives %d buckets, more than %d", tc.span, n, tc.max)
		}
	}
}

// TestTimelineBounded: a long run with many pods and failure kinds keeps to
// the bucket, pod, class and marker limits.
func TestTimelineBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := runfile.Create(path, zdv1.Header{RunID: "x", Created: start, Scenario: zdv1.ScenarioSpec{Name: "long", Role: zdv1.RoleAssertion}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	for i := range n {
		r := zdv1.Result{Seq: uint64(i), Time: start.Add(time.Duration(i) * 360 * time.Millisecond), Status: 200,
			Pod: "pod-" + string(rune('a'+i%26))}
		switch i % 50 {
		case 1:
			r.Status, r.Pod = 500+i%20, "" // 20 HTTP statuses
		case 2:
			r.Status, r.Class, r.Pod = 0, zdv1.ClassReset, ""
		}
		if err := w.Result(r); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := w.Event(zdv1.Event{Time: r.Time, Source: "harness", Type: zdv1.EventPodTerminating, Object: "pod/x"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// No span in the report: the timeline finds it in the file.
	tl, err := BuildTimeline(context.Background(), path, &zdv1.Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	if tl.Results != n {
		t.Errorf("read %d results, want %d", tl.Results, n)
	}
	if tl.Buckets() > DefaultMaxBuckets {
		t.Errorf("%d buckets > %d", tl.Buckets(), DefaultMaxBuckets)
	}
	if len(tl.Classes) > maxClasses {
		t.Errorf("%d classes > %d: %v", len(tl.Classes), maxClasses, tl.Classes)
	}
	if len(tl.Pods) != maxPods+1 || tl.Pods[maxPods] != OtherPods {
		t.Errorf("pods = %v, want %d and %q", tl.Pods, maxPods, OtherPods)
	}
	if len(tl.Markers) != maxMarkers || tl.MarkersOmitted != n/10-maxMarkers {
		t.Errorf("markers %d omitted %d, want %d and %d", len(tl.Markers), tl.MarkersOmitted, maxMarkers, n/10-maxMarkers)
	}
	var total int64
	total += sum(tl.OK)
	for _, f := range tl.Failed {
		total += sum(f)
	}
	if total != n {
		t.Errorf("buckets hold %d results, want %d", total, n)
	}
}

func TestHTMLContents(t *testing.T) {
	root, dirs := twoRuns(t)
	runs, err := Load(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	md, html, junit := renderAll(t, runs, root)
	// A documentation case is never labelled PASS: that would read as
	// "safe" for a hazard the case only measures.
	for name, out := range map[string]string{"markdown": md, "html": html, "junit": junit} {
		for _, bad := range []string{"DOC · PASS", "DOC · FAIL", "verdict PASS", "verdict FAIL"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s labels a documentation case %q", name, bad)
			}
		}
	}

	for _, want := range []string{
		`<table class="matrix">`,
		`kind · v1.34.2 · metallb`, `kind · v1.33.4 · metallb`,
		`class="plot timeline"`, `class="plot podshare"`,
		`class="badge doc"`, `DOC · hazard reproduced`, `DOC · hazard reproduced · 75 dropped`,
		`timeline unavailable: run file source-ip-local-hardened/run.jsonl not found`,
		`class="marker marker-drain-start"`, `class="marker marker-endpoint-removed"`, `class="marker marker-lb-node-unhealthy"`,
		`class="window"`, `series-refused`, `series-http-503`,
		`<style>`,
		`class="plot latency"`, `class="plot podstate"`, `<table class="nodes">`,
		`<h2>Run r1: kind · v1.34.2 · metallb</h2>`,
		`events inside it or within ±`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
	// Self-contained: nothing fetched, nothing scripted.
	for _, bad := range []string{"<script", "<link", "src=\"http", "@import", "url(http"} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML is not self-contained: has %s", bad)
		}
	}
	// Every matrix link lands on a scenario section.
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`<article [^>]*id="([^"]+)"`).FindAllStringSubmatch(html, -1) {
		ids[m[1]] = true
	}
	matrix := html[strings.Index(html, `<table class="matrix">`):]
	matrix = matrix[:strings.Index(matrix, "</table>")]
	links := regexp.MustCompile(`<a class="badge [^"]*" href="#([^"]+)"`).FindAllStringSubmatch(matrix, -1)
	if len(links) != 10 {
		t.Errorf("matrix has %d links, want 10 (5 cases x 2 runs)", len(links))
	}
	for _, l := range links {
		if !ids[l[1]] {
			t.Errorf("matrix links to #%s, which is no scenario section", l[1])
		}
	}
	// Failing assertions are listed first, linking to their section.
	if !regexp.MustCompile(`(?s)<div class="attention">.*href="#r1-drain-node-cluster-hardened">drain-node/cluster/hardened</a>`).MatchString(html) {
		t.Errorf("the failing scenario is not listed under Needs attention")
	}
	// A failed scenario's reason is said once, in its verdict table; the
	// lists above name the check and its figures.
	want := map[string]int{}
	for _, run := range runs {
		for _, sc := range run.Scenarios {
			for _, r := range sc.Verdict.Reasons {
				if r.Status != zdv1.Pass {
					want[r.Message]++
				}
			}
		}
	}
	text := stdhtml.UnescapeString(html)
	for msg, n := range want {
		if got := strings.Count(text, msg); got != n {
			t.Errorf("reason %q appears %d times, want %d (once per scenario that has it)", msg, got, n)
		}
	}
	// The documentation scenario is never drawn as a failure.
	naive := sectionOf(t, html, "r1-rolling-update-local-naive")
	if strings.Contains(naive, `class="badge fail"`) || strings.Contains(naive, `status-FAIL role-assertion`) {
		t.Errorf("documentation scenario drawn as a failure:\n%s", naive[:min(len(naive), 2000)])
	}
	if !strings.Contains(naive, "never fails the suite") {
		t.Errorf("documentation scenario does not say what it is")
	}
	// Every SVG is well-formed XML.
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(html, -1)
	if len(svgs) < 8 {
		t.Errorf("%d plots, want at least 8", len(svgs))
	}
	for _, s := range svgs {
		dec := xml.NewDecoder(strings.NewReader(s))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("plot is not well-formed: %v", err)
			}
		}
	}
}

func sectionOf(t *testing.T, html, id string) string {
	t.Helper()
	i := strings.Index(html, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no section %s", id)
	}
	j := strings.Index(html[i:], "</article>")
	return html[i : i+j]
}

func TestMarkdown(t *testing.T) {
	root, dirs := twoRuns(t)
	runs, err := Load(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	md, _, _ := renderAll(t, runs, root)
	for _, want := range []string{
		"## ⚠️ zerodrop: ERROR", // one PASS has no run file to recompute it
		"**4 passed**, **1 failed**, **1 errored**, 4 documentation",
		"### Readiness matrix",
		"| drain-node / Cluster / hardened | assertion | [❌ FAIL](kind-v1.34.2/drain-node-cluster-hardened/run.jsonl) | [✅ PASS](kind-v1.33.4/drain-node-cluster-hardened/run.jsonl) |",
		// The run file is gone: the cell links the report, and its PASS is
		// a claim.
		"[⚠️ ERROR](kind-v1.33.4/report.json)",
		"📘 DOC · hazard reproduced",              // distribution: a pod got nothing
		"📘 DOC · hazard reproduced · 75 dropped", // rolling-update naive
		"W0 at 02:01:50.000",
		"events inside it or within ±",
		"- 2xx per node: ",
		"endpoint-terminating pod/zd/echo-aa-4",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdownFitsAComment(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	cases := rendertest.Standard()
	for i := range cases {
		cases[i].Duration = 6 * time.Second
		cases[i].Outages = []rendertest.Outage{{From: time.Second, For: 4 * time.Second, Kind: "503", Every: 3}}
		cases[i].NoRunFile = true // the summary needs the reports only
	}
	for i := range 30 {
		d := filepath.Join(root, "run"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		rendertest.WriteRun(t, d, rendertest.Env{Provider: "kind", Kubernetes: "v1." + string(rune('0'+i%10)), LB: "metallb"}, cases)
		dirs = append(dirs, d)
	}
	runs, err := Load(context.Background(), dirs, WithoutTimelines())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Markdown(&b, runs, MarkdownOptions{OutDir: root}); err != nil {
		t.Fatal(err)
	}
	if b.Len() > MaxMarkdownBytes {
		t.Errorf("summary is %d bytes, more than %d", b.Len(), MaxMarkdownBytes)
	}
	if !strings.Contains(b.String(), "### Readiness matrix") {
		t.Errorf("the matrix did not survive the cut")
	}
}

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Out string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnit(t *testing.T) {
	root, dirs := twoRuns(t)
	runs, err := Load(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	_, _, junit := renderAll(t, runs, root)
	var doc junitDoc
	if err := xml.Unmarshal([]byte(junit), &doc); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, junit)
	}
	// The error is the scenario whose run file is missing: its PASS is a
	// claim nobody can recompute.
	if doc.Tests != 10 || doc.Failures != 1 || doc.Errors != 1 {
		t.Errorf("tests/failures/errors = %d/%d/%d, want 10/1/1", doc.Tests, doc.Failures, doc.Errors)
	}
	if len(doc.Suites) != 2 {
		t.Fatalf("%d suites, want 2", len(doc.Suites))
	}
	// Both runs hold the same scenarios: the environment keeps them apart.
	ids := map[string]bool{}
	for _, su := range doc.Suites {
		for _, c := range su.Cases {
			id := c.Classname + "/" + c.Name
			if ids[id] {
				t.Errorf("test identity %s appears twice across environments", id)
			}
			ids[id] = true
		}
	}
	for _, c := range doc.Suites[0].Cases {
		switch c.Name {
		case "drain-node/cluster/hardened":
			if c.Failure == nil || !strings.Contains(c.Failure.Text, "W1") {
				t.Errorf("drain-node failure = %+v, want a failure listing W1", c.Failure)
			}
		case "rolling-update/local/naive":
			if c.Failure != nil || c.Error != nil {
				t.Errorf("documentation case failed the JUnit report")
			}
			if !strings.Contains(c.Out, "documentation scenario") || !strings.Contains(c.Out, "hazard reproduced") {
				t.Errorf("documentation case output does not say it is one and that the hazard was reproduced: %q", c.Out)
			}
		}
	}
}

func TestFailedAndTotals(t *testing.T) {
	_, dirs := twoRuns(t)
	runs, err := Load(context.Background(), dirs, WithoutTimelines())
	if err != nil {
		t.Fatal(err)
	}
	if !Failed(runs) {
		t.Errorf("Failed = false with an assertion FAIL")
	}
	// The second run's only assertion that is not a pass has no run file:
	// report.json says PASS, which nothing can recompute.
	if !Failed(runs[1:]) {
		t.Errorf("Failed = false for a run whose PASS is unverified")
	}
	var verified []*Scenario
	for _, sc := range runs[1].Scenarios {
		if sc.Evidence == EvidenceUnverified {
			if sc.Verdict.Status != zdv1.Error || sc.Verdict.Reasons[0].Check != zdv1.CheckEvidence {
				t.Errorf("%s: unverified scenario shown as %s %+v, want ERROR on the evidence check", sc.Name, sc.Verdict.Status, sc.Verdict.Reasons)
			}
			continue
		}
		verified = append(verified, sc)
	}
	runs[1].Scenarios = verified
	if Failed(runs[1:]) {
		t.Errorf("Failed = true for a run whose only non-passes are documentation")
	}
	runs[1].Scenarios = nil
	if !Failed(runs[1:]) || Total(runs[1:]).Status != zdv1.Error {
		t.Errorf("an empty report must count as failed (it proves nothing)")
	}
}

func TestDeterministic(t *testing.T) {
	root, dirs := twoRuns(t)
	render := func() string {
		runs, err := Load(context.Background(), dirs)
		if err != nil {
			t.Fatal(err)
		}
		md, html, junit := renderAll(t, runs, root)
		return md + html + junit
	}
	if a, b := render(), render(); a != b {
		t.Errorf("two renderings of the same runs differ")
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			if err := os.WriteFile(filepath.Join(d, ReportFileName), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	good := zdv1.New(zdv1.RunMeta{Provider: "none"})
	good.Scenarios = append(good.Scenarios, zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "x", Role: zdv1.RoleAssertion}, Verdict: zdv1.Verdict{Status: "MAYBE"}})
	badStatus, _ := json.Marshal(good)
	tests := []struct {
		name string
		dir  string
		want string
	}{
		{"missing dir", filepath.Join(dir, "nope"), "nope"},
		{"no report", write("empty", ""), "empty/report.json: no report.json"},
		{"invalid json", write("broken", "{not json"), "broken/report.json"},
		{"wrong schema", write("old", `{"schemaVersion":"zerodrop.dev/report/v0","scenarios":[]}`), "old/report.json"},
		{"bad status", write("status", string(badStatus)), `verdict status "MAYBE"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), []string{tc.dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load error = %v, want one naming %q", err, tc.want)
			}
		})
	}
	// A file is not a run directory.
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), []string{f}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Load(file) error = %v, want 'not a directory'", err)
	}
}

func TestCorruptLineKeepsTheRestAndIsFlagged(t *testing.T) {
	dir := t.TempDir()
	cases := rendertest.Standard()[:1]
	rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, cases)
	// A bad line in the middle of the run file, after the report was made.
	path := filepath.Join(dir, "rolling-update-local-hardened", "run.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	lines[5] = []byte(`{"kind":"result","seq":"not a number"}`)
	if err := os.WriteFile(path, bytes.Join(lines, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := Load(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	sc := runs[0].Scenarios[0]
	if sc.Timeline == nil || !strings.Contains(sc.TimelineNote, "line 6") {
		t.Errorf("timeline = %v, note %q: want the timeline of the other lines and a note naming line 6", sc.Timeline != nil, sc.TimelineNote)
	}
	if sc.Evidence != EvidenceMismatch || !strings.Contains(sc.EvidenceNote, "SHA-256") || !strings.Contains(sc.EvidenceNote, "1999") {
		t.Errorf("evidence %s: %q; want a mismatch naming the digest and the lost request", sc.Evidence, sc.EvidenceNote)
	}
	_, html, _ := renderAll(t, runs, dir)
	if !strings.Contains(html, "ev-mismatch") || !strings.Contains(html, ">2,000<") {
		t.Errorf("HTML does not show report.json's numbers flagged as contradicted by the run file")
	}
}

// TestTamperedReportIsCaught: a report.json whose verdict was edited to PASS
// over a run file full of failures is a mismatch, and so is one whose run
// file was swapped; an untouched one is verified.
func TestTamperedReportIsCaught(t *testing.T) {
	dir := t.TempDir()
	cases := rendertest.Standard()
	rep := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, cases)
	runs, err := Load(context.Background(), []string{dir}, WithoutTimelines())
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range runs[0].Scenarios {
		want := EvidenceVerified
		if !sc.RunFileExists {
			want = EvidenceUnverified
		}
		if sc.Evidence != want {
			t.Errorf("%s: evidence %s (%s), want %s", sc.Name, sc.Evidence, sc.EvidenceNote, want)
		}
	}
	if m := Mismatches(runs); len(m) != 0 {
		t.Fatalf("untouched report: %d mismatches", len(m))
	}
	failed := -1
	for i, sc := range rep.Scenarios {
		if sc.Verdict.Status == zdv1.Fail && sc.RunFile != "" {
			failed = i
		}
	}
	if failed < 0 {
		t.Fatal("the standard cases have no failing scenario to tamper with")
	}
	rep.Scenarios[failed].Verdict.Status = zdv1.Pass
	rep.Scenarios[failed].Results.Dropped = 0
	rep.Summarize()
	if err := rep.WriteFile(filepath.Join(dir, ReportFileName)); err != nil {
		t.Fatal(err)
	}
	runs, err = Load(context.Background(), []string{dir}, WithoutTimelines())
	if err != nil {
		t.Fatal(err)
	}
	m := Mismatches(runs)
	if len(m) != 1 || m[0].Name != rep.Scenarios[failed].Name || !strings.Contains(m[0].EvidenceNote, "report.json says PASS, the run file gives FAIL") {
		t.Fatalf("tampered verdict: mismatches %v", m)
	}
}

func BenchmarkBuildTimeline(b *testing.B) {
	dir := b.TempDir()
	cases := []rendertest.Case{rendertest.Standard()[2]}
	cases[0].Rate = 1000
	cases[0].Duration = 60 * time.Second
	rep := rendertest.WriteRun(b, dir, rendertest.Env{Provider: "kind"}, cases)
	sc := &rep.Scenarios[0]
	path := filepath.Join(dir, sc.RunFile)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := BuildTimeline(context.Background(), path, sc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sc.Results.Total), "results/op")
}

func TestHeadlineNamesAPlatformLimit(t *testing.T) {
	for _, tc := range []struct {
		dropped int64
		want    string
	}{
		{0, "0 of 100 requests dropped this time (platform limit"},
		{3, "documented hazard: 3 of 100 requests dropped in 0 failure window(s) (platform limit"},
	} {
		sc := &Scenario{Scenario: zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Role: zdv1.RoleDocumentation, PlatformLimit: "the VIP moves"}}}
		sc.Results.Total, sc.Results.Dropped = 100, tc.dropped
		if got := sc.headline(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("dropped %d: headline %q, want prefix %q", tc.dropped, got, tc.want)
		}
	}
}

// A report written by another zerodrop whose analysis words a reason
// differently is told apart from a tampered one: same run file, same
// verdict and counts; a changed verdict stays a mismatch whatever the
// versions.
func TestOtherVersionIsNotAMismatch(t *testing.T) {
	dir := t.TempDir()
	rep := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, rendertest.Standard())
	rep.Run.ToolVersion = "v0.9.0"
	i := -1
	for j, sc := range rep.Scenarios {
		if sc.RunFile != "" && sc.RunFileSHA256 != "" && len(sc.Verdict.Reasons) > 0 {
			i = j
		}
	}
	if i < 0 {
		t.Fatal("no scenario with a run file and reasons")
	}
	rep.Scenarios[i].Verdict.Reasons[0].Message += " (worded by v0.9.0)"
	if err := rep.WriteFile(filepath.Join(dir, ReportFileName)); err != nil {
		t.Fatal(err)
	}
	load := func(version string) *Scenario {
		runs, err := Load(context.Background(), []string{dir}, WithoutTimelines(), WithToolVersion(version))
		if err != nil {
			t.Fatal(err)
		}
		return runs[0].Scenarios[i]
	}
	if sc := load("v1.0.0"); sc.Evidence != EvidenceOtherVersion || !strings.Contains(sc.EvidenceNote, "written by zerodrop v0.9.0 and this is v1.0.0") {
		t.Errorf("other version: %s (%s)", sc.Evidence, sc.EvidenceNote)
	}
	if sc := load("v0.9.0"); sc.Evidence != EvidenceMismatch {
		t.Errorf("same version: %s (%s), want a mismatch", sc.Evidence, sc.EvidenceNote)
	}
	rep.Scenarios[i].Results.Dropped++
	if err := rep.WriteFile(filepath.Join(dir, ReportFileName)); err != nil {
		t.Fatal(err)
	}
	if sc := load("v1.0.0"); sc.Evidence != EvidenceMismatch {
		t.Errorf("changed counts under another version: %s (%s), want a mismatch", sc.Evidence, sc.EvidenceNote)
	}
}

// TestRemeasuredScenario: a scenario measured again after the load
// generator spoiled a measurement shows the earlier one with its run file,
// and the earlier run file is re-derived too: replacing it with one that
// saw a failure is a mismatch, and a missing one leaves the evidence
// unverified.
func TestRemeasuredScenario(t *testing.T) {
	dir := t.TempDir()
	clean := rendertest.Standard()[0]
	stalled := clean.Stalled()
	first := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, []rendertest.Case{stalled}).Scenarios[0]
	if !first.LoadSpoiled() {
		t.Fatalf("the stalled case is not spoiled by the load alone: %+v", first.Verdict)
	}
	sub := filepath.Dir(first.RunFile)
	if err := os.MkdirAll(filepath.Join(dir, sub, "attempt-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, first.RunFile), filepath.Join(dir, sub, "attempt-1", "run.jsonl")); err != nil {
		t.Fatal(err)
	}
	first.RunFile = filepath.Join(sub, "attempt-1", "run.jsonl")
	rep := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, []rendertest.Case{clean})
	rep.Scenarios[0].Remeasured = []zdv1.Remeasure{first.AsRemeasure()}
	write := func() {
		t.Helper()
		rep.Summarize()
		if err := rep.WriteFile(filepath.Join(dir, ReportFileName)); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *Scenario {
		t.Helper()
		runs, err := Load(context.Background(), []string{dir}, WithoutTimelines())
		if err != nil {
			t.Fatal(err)
		}
		return runs[0].Scenarios[0]
	}
	write()
	runs, err := Load(context.Background(), []string{dir}, WithoutTimelines())
	if err != nil {
		t.Fatal(err)
	}
	sc := runs[0].Scenarios[0]
	if sc.Evidence != EvidenceVerified || !strings.Contains(sc.EvidenceNote, "1 earlier measurement(s) re-derived") {
		t.Errorf("evidence %s: %q; want verified, the earlier measurement too", sc.Evidence, sc.EvidenceNote)
	}
	if rep.Summary.Remeasured != 1 || !strings.Contains(rep.Summary.Submission, "1 scenario(s) had a measurement spoiled") {
		t.Errorf("summary %+v does not count the scenario measured again", rep.Summary)
	}
	md, html, junit := renderAll(t, runs, dir)
	if !strings.Contains(html, "PASS · measured 2×") || !strings.Contains(md, "PASS · measured 2×") {
		t.Error("the scenario tables do not mark the cell measured again")
	}
	for what, page := range map[string]string{"HTML": html, "Markdown": md, "JUnit": junit} {
		if !strings.Contains(page, "measurement 1") || !strings.Contains(page, "attempt-1/run.jsonl") || !strings.Contains(page, "could not deliver the load") {
			t.Errorf("%s does not show the spoiled measurement, its run file and what the load missed:\n%s", what, page)
		}
	}

	// The earlier run file replaced by one that also dropped requests
	// (its digest updated to match): not a spoiled measurement.
	dropped := stalled
	dropped.Outages = []rendertest.Outage{{From: 14 * time.Second, For: time.Second, Kind: zdv1.ClassRefused}}
	other := t.TempDir()
	worse := rendertest.WriteRun(t, other, rendertest.Env{Provider: "kind"}, []rendertest.Case{dropped}).Scenarios[0]
	data, err := os.ReadFile(filepath.Join(other, worse.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, first.RunFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	m := worse.AsRemeasure()
	m.RunFile = first.RunFile
	rep.Scenarios[0].Remeasured = []zdv1.Remeasure{m}
	write()
	if sc := load(); sc.Evidence != EvidenceMismatch || !strings.Contains(sc.EvidenceNote, "more than a measurement the load generator spoiled") {
		t.Errorf("a replaced failing measurement: evidence %s: %q; want a mismatch", sc.Evidence, sc.EvidenceNote)
	}

	// Listed as more than a spoiled load: a mismatch even without its file.
	if err := os.Remove(filepath.Join(dir, first.RunFile)); err != nil {
		t.Fatal(err)
	}
	if sc := load(); sc.Evidence != EvidenceMismatch || !strings.Contains(sc.EvidenceNote, "report.json lists") {
		t.Errorf("a listed failing measurement without its file: evidence %s: %q; want a mismatch", sc.Evidence, sc.EvidenceNote)
	}

	// The spoiled measurement listed, its run file gone: unverified.
	rep.Scenarios[0].Remeasured = []zdv1.Remeasure{first.AsRemeasure()}
	write()
	if sc := load(); sc.Evidence != EvidenceUnverified || !strings.Contains(sc.EvidenceNote, "not found") {
		t.Errorf("a missing earlier run file: evidence %s: %q; want unverified", sc.Evidence, sc.EvidenceNote)
	}
}
