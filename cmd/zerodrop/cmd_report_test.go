package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/reports/render/rendertest"
)

func TestReportCommand(t *testing.T) {
	root := t.TempDir()
	failing := filepath.Join(root, "failing")
	passing := filepath.Join(root, "passing")
	for _, d := range []string{failing, passing} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rendertest.WriteRun(t, failing, rendertest.Env{Provider: "kind", Kubernetes: "v1.34.2", LB: "metallb"}, rendertest.Standard())
	// Only a documentation scenario drops: the suite passes.
	cases := rendertest.Standard()
	cases[2].Outages = nil
	rendertest.WriteRun(t, passing, rendertest.Env{Provider: "kind", Kubernetes: "v1.33.4", LB: "metallb"}, cases)

	t.Run("passing run exits 0 and writes everything", func(t *testing.T) {
		code, out, errOut := runCLI(t, "report", passing)
		if code != exitOK {
			t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
		}
		for _, f := range []string{"summary.md", "report.html", "junit-zerodrop.xml"} {
			if _, err := os.Stat(filepath.Join(passing, f)); err != nil {
				t.Errorf("%s not written: %v", f, err)
			}
		}
		if !strings.Contains(out, "PASS: 1 run(s), 5 scenario(s): 3 passed, 0 failed, 0 errored, 2 documentation") {
			t.Errorf("stdout = %q", out)
		}
	})
	t.Run("assertion failure exits 1; merged into --out", func(t *testing.T) {
		out := filepath.Join(root, "merged")
		code, stdout, errOut := runCLI(t, "report", "--out", out, passing, failing)
		if code != exitFailed {
			t.Fatalf("exit %d, want 1\n%s%s", code, stdout, errOut)
		}
		md, err := os.ReadFile(filepath.Join(out, "summary.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), "kind · v1.33.4 · metallb | kind · v1.34.2 · metallb |") {
			t.Errorf("summary has no matrix over both runs:\n%s", md)
		}
		if !strings.Contains(string(md), "(../failing/drain-node-cluster-hardened/run.jsonl)") {
			t.Errorf("evidence links are not relative to --out:\n%s", md)
		}
		html, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(html), `<a href="../failing/drain-node-cluster-hardened/run.jsonl">run file</a>`) ||
			!strings.Contains(string(html), `<a href="../passing/report.json">report.json</a>`) {
			t.Errorf("report.html does not link the evidence relative to --out")
		}
	})
	t.Run("ginkgo junit present: auto skips ours", func(t *testing.T) {
		d := filepath.Join(root, "ginkgo")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		rendertest.WriteRun(t, d, rendertest.Env{Provider: "kind"}, rendertest.Standard()[:1])
		if err := os.WriteFile(filepath.Join(d, "junit.xml"), []byte("<testsuites/>"), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := runCLI(t, "report", d); code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(d, "junit-zerodrop.xml")); !os.IsNotExist(err) {
			t.Errorf("junit-zerodrop.xml written next to Ginkgo's junit.xml with --junit=auto (stat: %v)", err)
		}
		if code, _, _ := runCLI(t, "report", "--junit=always", d); code != exitOK {
			t.Fatalf("--junit=always: exit %d", code)
		}
		if _, err := os.Stat(filepath.Join(d, "junit-zerodrop.xml")); err != nil {
			t.Errorf("--junit=always did not write it: %v", err)
		}
	})
	t.Run("missing run file: ERROR, not a pass; timeline unavailable", func(t *testing.T) {
		d := filepath.Join(root, "lost")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		cs := rendertest.Standard()[:1]
		cs[0].NoRunFile = true
		rendertest.WriteRun(t, d, rendertest.Env{Provider: "kind"}, cs)
		code, out, errOut := runCLI(t, "report", d)
		if code != exitFailed {
			t.Fatalf("exit %d, want %d: report.json's PASS without its run file is not a pass\n%s%s", code, exitFailed, out, errOut)
		}
		if !strings.Contains(out, "ERROR: 1 run(s), 1 scenario(s): 0 passed, 0 failed, 1 errored") || !strings.Contains(out, "1 unverified") {
			t.Errorf("stdout does not count the unverified PASS as an error: %q", out)
		}
		if !strings.Contains(errOut, "timeline unavailable: run file rolling-update-local-hardened/run.jsonl not found") {
			t.Errorf("stderr does not say the timeline is unavailable: %q", errOut)
		}
	})
}

// TestReportRefusesATamperedReport: report.json edited to PASS over a run
// file full of failures is refused and nothing is written.
func TestReportRefusesATamperedReport(t *testing.T) {
	dir := t.TempDir()
	rep := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind", Kubernetes: "v1.34.2", LB: "metallb"}, rendertest.Standard())
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Verdict.Status == zdv1.Fail {
			rep.Scenarios[i].Verdict.Status = zdv1.Pass
		}
	}
	rep.Summarize()
	if err := rep.WriteFile(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, errOut := runCLI(t, "report", "--out", out, dir)
	if code != exitBroken || !strings.Contains(errOut, "report.json says PASS, the run file gives FAIL") || !strings.Contains(errOut, "nothing was written") {
		t.Fatalf("exit %d, want 2 naming the contradiction\n%s%s", code, stdout, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output directory exists after a refusal: %v", err)
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid")
	if err := os.MkdirAll(invalid, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(invalid, "report.json"), []byte(`{"schemaVersion":`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no dir", []string{"report"}, "want at least one run DIR"},
		{"missing dir", []string{"report", "--out", out, filepath.Join(dir, "nope")}, "nope"},
		{"invalid report", []string{"report", "--out", out, invalid}, filepath.Join(invalid, "report.json")},
		{"no report", []string{"report", "--out", out, empty}, filepath.Join(empty, "report.json")},
		{"bad junit flag", []string{"report", "--junit=sometimes", empty}, `--junit="sometimes"`},
		{"bad flag", []string{"report", "--nope", empty}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != exitBroken {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("bad input left %s behind", out)
			}
		})
	}
	code, stdout, _ := runCLI(t, "report", "--help")
	if code != exitOK || !strings.Contains(stdout, "junit-zerodrop.xml") {
		t.Errorf("--help: exit %d, %q", code, stdout)
	}
}

// TestReportRedactsSecrets: secrets in event messages, config and load
// settings never reach the rendered files.
func TestReportRedactsSecrets(t *testing.T) {
	const (
		jwt     = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWc"
		awsKey  = "AKIAIOSFODNN7EXAMPLE"
		awsSec  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		keyData = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB"
	)
	secrets := []string{
		"Authorization: Bearer " + jwt,
		"apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: " + keyData + "\n",
		"AWS_ACCESS_KEY_ID=" + awsKey + " AWS_SECRET_ACCESS_KEY=" + awsSec,
	}
	dir := t.TempDir()
	var cases []rendertest.Case
	for i, s := range secrets {
		c := rendertest.Standard()[i]
		c.Secret = s
		cases = append(cases, c)
	}
	rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, cases)
	// report.json and run-file events are redacted when written. A run
	// file from elsewhere (an older version, a hand edit) may still carry a
	// secret: plant one, so the renderer's own pass is what is tested.
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), awsSec) {
		t.Error("report.json holds the AWS secret: zdv1.WriteFile should have redacted it")
	}
	var planted int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil
		}
		// Before the end line, where a reader still takes events.
		i := strings.LastIndex(strings.TrimRight(string(b), "\n"), "\n")
		line := `{"kind":"event","time":"2026-11-21T02:00:03Z","source":"harness","type":"note","object":"node/kind-worker","message":"leaked AWS_SECRET_ACCESS_KEY=` + awsSec + ` Authorization: Bearer ` + jwt + `"}` + "\n"
		// The end line counts it too, as the writer of such a file did:
		// a line added behind the end line's back is refused on its own.
		// Such a file is from before the hash chain: its end line has none.
		end := regexp.MustCompile(`"events":(\d+)`).ReplaceAllStringFunc(string(b[i+1:]), func(m string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, `"events":`))
			return fmt.Sprintf(`"events":%d`, n+1)
		})
		end = regexp.MustCompile(`,"chain_sha256":"[0-9a-f]+"`).ReplaceAllString(end, "")
		out := string(b[:i+1]) + line + end
		if werr := os.WriteFile(path, []byte(out), 0o644); werr == nil {
			planted++
		}
		return nil
	})
	if planted == 0 {
		t.Fatal("test setup: no run file to plant a secret in")
	}
	// As from an older version: report.json names no digest, so the
	// planted note (which changes no figure) is not a contradiction.
	old, err := zdv1.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range old.Scenarios {
		old.Scenarios[i].RunFileSHA256 = ""
	}
	if err := old.WriteFile(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "report", "--junit=always", dir); code == exitBroken {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, f := range []string{"summary.md", "report.html", "junit-zerodrop.xml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{jwt, jwt[:24], awsKey, awsSec, keyData, keyData[:20]} {
			if strings.Contains(string(data), s) {
				t.Errorf("%s holds secret %q", f, s)
			}
		}
		// Markdown escapes the marker's brackets (it is text, not a link).
		mdMarker := strings.NewReplacer("[", `\[`, "]", `\]`).Replace(zdv1.Redacted)
		if !strings.Contains(string(data), zdv1.Redacted) && !strings.Contains(string(data), mdMarker) {
			t.Errorf("%s shows no redaction marker: were the secrets rendered at all?", f)
		}
	}
}

// TestAnalyzeKeepsEarlierMeasurements: report.json rebuilt from a suite's
// run files keeps a cell's measurements the load generator spoiled
// (attempt-N/ beside its run file), and zerodrop report verifies them.
func TestAnalyzeKeepsEarlierMeasurements(t *testing.T) {
	dir := t.TempDir()
	clean := rendertest.Standard()[0]
	stalled := clean.Stalled()
	first := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, []rendertest.Case{stalled}).Scenarios[0]
	if _, err := scenario.SetAside(dir, first); err != nil {
		t.Fatal(err)
	}
	rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, []rendertest.Case{clean})
	if err := os.Remove(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "analyze", dir); code != exitOK {
		t.Fatalf("analyze: exit %d\n%s%s", code, out, errOut)
	}
	rep, err := zdv1.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 1 {
		t.Fatalf("%d scenarios, want the cell once", len(rep.Scenarios))
	}
	sc := rep.Scenarios[0]
	want := filepath.Join(filepath.Dir(sc.RunFile), "attempt-1", "run.jsonl")
	if sc.Verdict.Status != zdv1.Pass || len(sc.Remeasured) != 1 || sc.Remeasured[0].RunFile != want || sc.Remeasured[0].Verdict.Status != zdv1.Error ||
		rep.Summary.Remeasured != 1 {
		t.Fatalf("scenario %s with earlier %+v (summary %+v); want PASS after one ERROR in %s", sc.Verdict.Status, sc.Remeasured, rep.Summary, want)
	}
	code, out, errOut := runCLI(t, "report", dir)
	if code != exitOK || !strings.Contains(out, "1 verified") {
		t.Errorf("report: exit %d\n%s%s", code, out, errOut)
	}
}

// TestAnalyzeKeepsACellWhoseLastMeasurementBroke: a cell measured again
// whose new measurement left no run file (it broke before its load began)
// is an ERROR in the rebuilt report, with its spoiled measurement.
func TestAnalyzeKeepsACellWhoseLastMeasurementBroke(t *testing.T) {
	dir := t.TempDir()
	first := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind"}, []rendertest.Case{rendertest.Standard()[0].Stalled()}).Scenarios[0]
	if _, err := scenario.SetAside(dir, first); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "analyze", dir)
	if code == exitOK {
		t.Fatalf("analyze: exit 0 for a cell whose last measurement broke\n%s%s", out, errOut)
	}
	rep, err := zdv1.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 1 {
		t.Fatalf("%d scenarios, want the cell", len(rep.Scenarios))
	}
	sc := rep.Scenarios[0]
	if sc.Name != first.Name || sc.Verdict.Status != zdv1.Error || len(sc.Remeasured) != 1 || !strings.Contains(sc.Verdict.Reasons[0].Message, "no run file") {
		t.Errorf("cell %s %s with %d earlier (%+v); want %s ERROR with its spoiled measurement", sc.Name, sc.Verdict.Status, len(sc.Remeasured), sc.Verdict.Reasons, first.Name)
	}
}
