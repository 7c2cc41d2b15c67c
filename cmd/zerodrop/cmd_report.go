package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/internal/atomicfile"
	"zerodrop.dev/zerodrop/reports/render"
)

func reportCommand() command {
	return command{name: "report", summary: "render run directories as Markdown, HTML (plots, readiness matrix) and JUnit", run: runReport}
}

const reportDescription = `
Reads DIR/report.json (and the run files it names) for every DIR and writes,
into --out (default: the first DIR):

  summary.md           the verdict, readiness matrix and per-scenario table;
                       fits a pull-request comment or $GITHUB_STEP_SUMMARY
  report.html          one self-contained page (inline CSS and SVG, no network,
                       no JavaScript): timelines of ok/failed requests with
                       every event as a marker in its type's colour, latency
                       and answers from unready or draining pods over time,
                       per-pod share, failure windows with the events in and
                       around them, per-node figures, the implementation
                       block with a summary to attach to a submission, and
                       the readiness matrix linking every cell to its
                       evidence
  junit-zerodrop.xml   one testcase per scenario, for CI test reporting

Every scenario is checked against its run file first: the run file is
analysed again (with the criteria overrides report.json records) and must
give the same figures and verdict, and its SHA-256 must be the one
report.json names. A report that disagrees with its run files is refused
(exit 2, nothing written); a scenario without its run file is unverified
and counts as ERROR whatever report.json claims (exit 1).

Signatures: zerodrop signs every run file it writes (an in-toto statement
in a DSSE envelope, run.dsse.json next to run.jsonl; see zerodrop keygen).
With --verify-key, each scenario's run file must be the one a trusted key
signed, its lines chaining to the signed head; otherwise the report is
refused like one its run files contradict.

Several DIRs (for example one per Kubernetes version or provider) merge into
one matrix: rows are scenario / policy / profile, columns provider /
Kubernetes / LB. A scenario whose run file is missing keeps its numbers and
says its timeline is unavailable. Tokens, kubeconfigs and cloud keys are
redacted from every output.

JUnit: --junit=auto writes junit-zerodrop.xml unless a DIR already holds
junit.xml from Ginkgo (suite runs); always and never force it.

Exit status: 0 no assertion scenario failed (documentation scenarios never
fail), 1 an assertion scenario is FAIL or ERROR or a report has no scenario,
2 bad input (missing directory, unreadable or invalid report.json, a report
that its run files contradict).`

// Output names of `zerodrop report`.
const (
	summaryFileName = "summary.md"
	ginkgoJUnitName = "junit.xml"
)

func runReport(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "report", "[flags] DIR...", reportDescription)
	out := fs.String("out", "", "output `DIR` (default: the first DIR)")
	junit := fs.String("junit", "auto", "write "+render.JUnitFileName+": auto (unless a DIR holds Ginkgo's junit.xml), always, never")
	title := fs.String("title", "", "page title of report.html")
	maxBuckets := fs.Int("max-buckets", render.DefaultMaxBuckets, "most time buckets per timeline plot")
	var verifyKeys stringList
	fs.Var(&verifyKeys, "verify-key", "`PATH` of a public key (zerodrop keygen's PATH.pub) trusted to sign run files; repeat for several. "+
		"Given, every scenario's run file must carry a signature one of them made over exactly its lines, or nothing is written (exit 2)")
	if code, ok := parseFlags(c, fs, args); !ok {
		return code
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		return badInput(c, "report", "want at least one run DIR holding report.json")
	}
	switch *junit {
	case "auto", "always", "never":
	default:
		return badInput(c, "report", "--junit=%q: want auto, always or never", *junit)
	}
	if *maxBuckets < 10 || *maxBuckets > 5000 {
		return badInput(c, "report", "--max-buckets=%d: want 10..5000", *maxBuckets)
	}
	if *out == "" {
		*out = dirs[0]
	}
	var keys []*evidence.PublicKey
	for _, p := range verifyKeys {
		k, err := evidence.LoadPublicKey(p)
		if err != nil {
			return badInput(c, "report", "--verify-key: %v", err)
		}
		keys = append(keys, k)
	}

	// Read everything before writing anything, so bad input leaves nothing
	// behind.
	runs, err := render.Load(ctx, dirs, render.WithTimelineOptions(render.WithMaxBuckets(*maxBuckets)), render.WithToolVersion(c.version),
		render.WithVerifyKeys(keys...))
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(c.stderr, "zerodrop report: interrupted: %v\n", err)
			return exitBroken
		}
		return badInput(c, "report", "%v", err)
	}
	// A report is only as good as its evidence: report.json whose verdict
	// or figures its own run files contradict (an edited report, a swapped
	// run file) is refused, and nothing is written.
	if bad := render.Mismatches(runs); len(bad) > 0 {
		for _, sc := range bad {
			fmt.Fprintf(c.stderr, "zerodrop report: %s: %s: %s\n", sc.Run.Dir, sc.Name, sc.EvidenceNote)
		}
		fmt.Fprintf(c.stderr, "zerodrop report: %d scenario(s) of report.json disagree with their run files or signatures; nothing was written. "+
			"Rebuild report.json from the run files with `zerodrop analyze DIR`, or find out who changed them.\n", len(bad))
		return exitBroken
	}
	writeJUnit := *junit == "always"
	if *junit == "auto" {
		writeJUnit = true
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, ginkgoJUnitName)); err == nil {
				writeJUnit = false
			}
		}
	}

	var md, html, xml bytes.Buffer
	if err := render.Markdown(&md, runs, render.MarkdownOptions{OutDir: *out, HTMLName: render.HTMLFileName}); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop report: %v\n", err)
		return exitBroken
	}
	if err := render.HTML(&html, runs, render.HTMLOptions{Title: *title, OutDir: *out}); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop report: %v\n", err)
		return exitBroken
	}
	files := []struct {
		name string
		data *bytes.Buffer
	}{{summaryFileName, &md}, {render.HTMLFileName, &html}}
	if writeJUnit {
		if err := render.JUnit(&xml, runs); err != nil {
			fmt.Fprintf(c.stderr, "zerodrop report: %v\n", err)
			return exitBroken
		}
		files = append(files, struct {
			name string
			data *bytes.Buffer
		}{render.JUnitFileName, &xml})
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop report: create output directory: %v\n", err)
		return exitBroken
	}
	for _, f := range files {
		path := filepath.Join(*out, f.name)
		if err := atomicfile.Write(path, f.data.Bytes()); err != nil {
			fmt.Fprintf(c.stderr, "zerodrop report: %v\n", err)
			return exitBroken
		}
		fmt.Fprintf(c.stdout, "wrote %s\n", path)
	}
	t := render.Total(runs)
	fmt.Fprintf(c.stdout, "%s: %d run(s), %d scenario(s): %d passed, %d failed, %d errored, %d documentation; %d verified against their run files, %d unverified",
		t.Status, t.Runs, t.Scenarios, t.Passed, t.Failed, t.Errored, t.Documentation, t.Verified, t.Unverified)
	if len(keys) > 0 {
		fmt.Fprintf(c.stdout, "; %d run file(s) signed by a trusted key", t.Signed)
	}
	if t.OtherVersion > 0 {
		fmt.Fprintf(c.stdout, ", %d written by another zerodrop version (same verdict and counts; re-derive with it to compare exactly)", t.OtherVersion)
	}
	fmt.Fprintln(c.stdout)
	for _, run := range runs {
		for _, sc := range run.Scenarios {
			if sc.Timeline == nil {
				fmt.Fprintf(c.stderr, "zerodrop report: %s: %s\n", sc.Name, sc.TimelineNote)
			}
		}
	}
	if render.Failed(runs) {
		return exitFailed
	}
	return exitOK
}
