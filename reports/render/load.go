package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/harness/verdict"
)

// ReportFileName is the report every run directory holds.
const ReportFileName = "report.json"

// Run is one run directory loaded for rendering: its report (already
// redacted) and, per scenario, the timeline from its run file.
type Run struct {
	// Dir is the directory as given.
	Dir string
	// ID is unique among the runs rendered together ("r1", "r2" ...) and
	// prefixes every anchor of the run in the HTML.
	ID        string
	Report    *zdv1.Report
	Scenarios []*Scenario
}

// Scenario is one scenario of a run with what the renderers add to it.
type Scenario struct {
	zdv1.Scenario
	Run *Run
	// Anchor is the scenario's id in the HTML ("r1-rolling-update-local-hardened").
	Anchor string
	// RunFilePath is where the run file was looked for ("" when the report
	// names none).
	RunFilePath string
	// Timeline is nil when the run file is missing or unreadable;
	// TimelineNote then says why.
	Timeline     *Timeline
	TimelineNote string
	// RunFileExists says the run file was found.
	RunFileExists bool
	// Evidence says whether report.json's figures and verdict for the
	// scenario were re-derived from its run file; EvidenceNote says how or
	// why not.
	Evidence     Evidence
	EvidenceNote string
	// Signed says the run file's signature was verified with a trusted key
	// (WithVerifyKeys).
	Signed bool
	// Earlier are the measurements of the scenario the load generator
	// spoiled (zdv1.Scenario.Remeasured), each with where its run file is.
	Earlier []Earlier
}

// Earlier is a spoiled measurement with the path its run file was looked
// for at ("" when the report names none) and whether it was found.
type Earlier struct {
	zdv1.Remeasure
	RunFilePath   string
	RunFileExists bool
}

// Evidence is how a scenario of report.json stands against its run file.
type Evidence string

const (
	// EvidenceVerified: the run file, analysed again with the criteria
	// overrides the report records, gives the same figures and verdict, and
	// its SHA-256 is the one the report names.
	EvidenceVerified Evidence = "verified"
	// EvidenceUnverified: there is no run file to check against; the
	// scenario's numbers rest on report.json alone.
	EvidenceUnverified Evidence = "unverified"
	// EvidenceMismatch: the run file says something else than report.json
	// (an edited report, a replaced run file, another analysis).
	EvidenceMismatch Evidence = "mismatch"
	// EvidenceOtherVersion: report.json was written by another zerodrop
	// than the one reading it, the run file is the one it names, and the
	// verdict's status and counts agree; other figures or wording differ,
	// as the analysis changed between the two versions. Re-deriving with
	// the writing version compares exactly.
	EvidenceOtherVersion Evidence = "other-version"
)

// Key identifies the environment of a run: a readiness-matrix column.
func (r *Run) Key() Column {
	c := Column{Provider: r.Report.Run.Provider, Kubernetes: r.Report.Run.KubernetesVersion, LB: r.Report.Run.LBImplementation,
		Gates: r.Report.Run.KubeProxyFeatureGates}
	// Suites label every scenario with provider and lb; use them when the
	// run metadata lacks them.
	for _, sc := range r.Scenarios {
		if c.Provider == "" {
			c.Provider = sc.Labels["provider"]
		}
		if c.LB == "" {
			c.LB = sc.Labels["lb"]
		}
	}
	return c
}

// Heading names the run: its environment, or for a plain URL load
// (provider "none", no cluster) what was loaded: "load of
// http://127.0.0.1:8080/".
func (r *Run) Heading() string {
	if r.Report.Run.Provider != "none" {
		return r.Key().String()
	}
	var targets []string
	for _, sc := range r.Scenarios {
		for _, t := range sc.Load.Targets {
			if !slices.Contains(targets, t) {
				targets = append(targets, t)
			}
		}
	}
	switch {
	case len(targets) == 0:
		return "load without a cluster (provider none)"
	case len(targets) > 3:
		return fmt.Sprintf("load of %s and %d more targets", strings.Join(targets[:3], ", "), len(targets)-3)
	}
	return "load of " + strings.Join(targets, ", ")
}

// LoadOption configures Load.
type LoadOption func(*loadConfig)

type loadConfig struct {
	timeline []TimelineOption
	noPlots  bool
	// version is the reading tool's; "" never tells versions apart.
	version string
	// keys are the public keys trusted to sign run files; none: signatures
	// are not checked.
	keys []*evidence.PublicKey
}

// WithVerifyKeys checks every scenario's run file against its signature
// (harness/evidence): a run file no trusted key signed, or one that
// differs from what was signed, is a mismatch (Mismatches), which zerodrop
// report refuses.
func WithVerifyKeys(keys ...*evidence.PublicKey) LoadOption {
	return func(c *loadConfig) { c.keys = append(c.keys, keys...) }
}

// WithToolVersion names the zerodrop doing the reading, so a report
// written by another version whose analysis changed is told apart from a
// report that disagrees with its run file (EvidenceOtherVersion).
func WithToolVersion(v string) LoadOption { return func(c *loadConfig) { c.version = v } }

// WithTimelineOptions passes options to BuildTimeline.
func WithTimelineOptions(opts ...TimelineOption) LoadOption {
	return func(c *loadConfig) { c.timeline = append(c.timeline, opts...) }
}

// WithoutTimelines skips reading run files (numbers only).
func WithoutTimelines() LoadOption { return func(c *loadConfig) { c.noPlots = true } }

// Load reads DIR/report.json for every dir, redacts it, and builds each
// scenario's timeline from its run file. A missing directory or an
// unreadable or invalid report.json is an error naming the file; a missing
// or broken run file only leaves that scenario without a timeline.
func Load(ctx context.Context, dirs []string, opts ...LoadOption) ([]*Run, error) {
	var cfg loadConfig
	for _, o := range opts {
		o(&cfg)
	}
	if len(dirs) == 0 {
		return nil, errors.New("no run directory given")
	}
	runs := make([]*Run, 0, len(dirs))
	for i, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("run directory %s: %w", dir, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("run directory %s is not a directory", dir)
		}
		path := filepath.Join(dir, ReportFileName)
		rep, err := zdv1.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: no report.json (run 'zerodrop analyze %s' to build it from the run files): %w", path, dir, err)
			}
			if strings.Contains(err.Error(), path) {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rep.Redact()
		run := &Run{Dir: dir, ID: "r" + strconv.Itoa(i+1), Report: rep}
		used := map[string]int{}
		for j := range rep.Scenarios {
			sc := &Scenario{Scenario: rep.Scenarios[j], Run: run}
			sc.Anchor = uniqueAnchor(run.ID+"-"+slug(sc.Name), used)
			sc.RunFilePath, sc.RunFileExists = runFileIn(dir, sc.RunFile)
			for _, m := range sc.Remeasured {
				e := Earlier{Remeasure: m}
				e.RunFilePath, e.RunFileExists = runFileIn(dir, m.RunFile)
				sc.Earlier = append(sc.Earlier, e)
			}
			run.Scenarios = append(run.Scenarios, sc)
		}
		for _, sc := range run.Scenarios {
			if err := sc.verify(ctx, cfg.version); err != nil {
				return nil, fmt.Errorf("render %s: %w", dir, err)
			}
			sc.verifySignature(ctx, cfg.keys)
		}
		if !cfg.noPlots {
			for _, sc := range run.Scenarios {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("render %s: %w", dir, err)
				}
				sc.loadTimeline(ctx, cfg.timeline)
			}
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// Text says what the k-th (from 0) spoiled measurement was: when, its
// counts and what the load generator missed.
func (e Earlier) Text(k int) string {
	return fmt.Sprintf("measurement %d, %s: %s, %s requests, %s dropped; %s", k+1, e.Start.UTC().Format("15:04:05"),
		e.Verdict.Status, formatCount(e.Total), formatCount(e.Dropped), e.Verdict.LoadProblem())
}

// runFileIn is where a report in dir names a run file (relative to dir
// unless absolute; "" for none) and whether a regular file is there.
func runFileIn(dir, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, name)
	}
	st, err := os.Stat(path)
	return path, err == nil && st.Mode().IsRegular()
}

// verify re-derives the scenario from its run file and compares. Only a
// cancelled context is an error; everything else is recorded on sc.
func (sc *Scenario) verify(ctx context.Context, version string) error {
	if err := sc.verifyLast(ctx, version); err != nil {
		return err
	}
	if err := sc.verifyEarlier(ctx, version); err != nil {
		return err
	}
	if sc.Evidence == EvidenceUnverified {
		sc.demote()
	}
	return nil
}

// verifySignature checks the run file's signature with the trusted keys; a
// signature that does not hold makes the evidence a mismatch. Without keys
// it only says who the run file names as its signer.
func (sc *Scenario) verifySignature(ctx context.Context, keys []*evidence.PublicKey) {
	if !sc.RunFileExists {
		return
	}
	if len(keys) == 0 {
		if sc.SigningKey != "" {
			sc.EvidenceNote = joinNote(sc.EvidenceNote, fmt.Sprintf("signed by key %.12s… (not checked: give zerodrop report --verify-key)", sc.SigningKey))
		}
		return
	}
	v, err := evidence.Verify(ctx, sc.RunFilePath, keys...)
	if err != nil {
		sc.Evidence = EvidenceMismatch
		sc.EvidenceNote = joinNote(sc.EvidenceNote, "signature: "+zdv1.SafeText(err.Error()))
		return
	}
	sc.Signed = true
	sc.EvidenceNote = joinNote(sc.EvidenceNote, fmt.Sprintf("signature verified: key %.12s…, %s", v.KeyID, filepath.Base(v.Envelope)))
}

// demote replaces the verdict report.json claims with ERROR: a verdict is
// recomputed from the run file's figures, and a scenario whose figures
// cannot be read has none. What report.json claimed stays in the message;
// the evidence note says what is missing.
func (sc *Scenario) demote() {
	claimed := sc.Verdict.Status
	sc.Verdict = zdv1.Verdict{Status: zdv1.Error, Reasons: []zdv1.Reason{{
		Check: zdv1.CheckEvidence, Status: zdv1.Error,
		Message: fmt.Sprintf("unverified: report.json claims %s; without its run file nothing recomputes it, so it is not a pass", claimed),
	}}}
}

// verifyEarlier checks each earlier measurement: what report.json lists
// must be a measurement the load generator alone spoiled
// (zdv1.Scenario.LoadSpoiled, the one reason a measurement is taken again),
// and its run file, re-derived, must give the same digest, verdict, counts
// and start. A disagreement makes the scenario's evidence a mismatch; a run
// file missing makes verified evidence unverified. As for the scenario
// itself, a report written by another zerodrop version may word a reason
// differently: then status and counts decide.
func (sc *Scenario) verifyEarlier(ctx context.Context, version string) error {
	var diffs, missing []string
	otherVersion := false
	written := sc.Run.Report.Run.ToolVersion
	for k, e := range sc.Earlier {
		which := fmt.Sprintf("earlier measurement %d", k+1)
		listed := zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Role: sc.Role}, Results: zdv1.Results{Total: e.Total, Dropped: e.Dropped}, Verdict: e.Verdict}
		if !listed.LoadSpoiled() {
			diffs = append(diffs, fmt.Sprintf("%s: report.json lists %s, %d dropped, which is more than a measurement the load generator spoiled", which, listed.Outcome(), e.Dropped))
			continue
		}
		if !e.RunFileExists {
			missing = append(missing, fmt.Sprintf("%s: run file %q not found", which, e.RunFile))
			continue
		}
		got, err := verdict.AnalyzeFile(ctx, e.RunFilePath, verdict.WithRunFileName(e.RunFile))
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			missing = append(missing, which+": run file unreadable: "+zdv1.RedactString(err.Error()))
			continue
		}
		got = redacted(got)
		switch {
		case e.RunFileSHA256 != "" && got.RunFileSHA256 != e.RunFileSHA256:
			diffs = append(diffs, fmt.Sprintf("%s: the run file's SHA-256 is %.12s…, report.json names %.12s…", which, got.RunFileSHA256, e.RunFileSHA256))
		case got.Verdict.Status != e.Verdict.Status || got.Results.Total != e.Total || got.Results.Dropped != e.Dropped:
			diffs = append(diffs, fmt.Sprintf("%s: report.json says %s, %d requests, %d dropped; the run file %s, %d, %d",
				which, e.Verdict.Status, e.Total, e.Dropped, got.Verdict.Status, got.Results.Total, got.Results.Dropped))
		case !got.LoadSpoiled():
			diffs = append(diffs, fmt.Sprintf("%s was replaced, but its run file gives %s: more than a measurement the load generator spoiled", which, got.Outcome()))
		case !sameJSON(got.Verdict, e.Verdict) || !got.Start.Equal(e.Start):
			if version != "" && written != "" && written != version {
				otherVersion = true
				continue
			}
			diffs = append(diffs, which+": report.json's start or reasons differ from the run file's")
		}
	}
	switch {
	case len(diffs) > 0:
		sc.Evidence = EvidenceMismatch
		sc.EvidenceNote = joinNote(sc.EvidenceNote, strings.Join(diffs, "; "))
	case len(missing) > 0 && sc.Evidence == EvidenceVerified:
		sc.Evidence = EvidenceUnverified
		sc.EvidenceNote = joinNote(sc.EvidenceNote, strings.Join(missing, "; "))
	case len(missing) > 0:
		sc.EvidenceNote = joinNote(sc.EvidenceNote, strings.Join(missing, "; "))
	case otherVersion:
		sc.EvidenceNote = joinNote(sc.EvidenceNote, fmt.Sprintf("%d earlier measurement(s) re-derived: each spoiled by the load generator alone, same status and counts (wording of zerodrop %s)", len(sc.Earlier), written))
	case len(sc.Earlier) > 0:
		sc.EvidenceNote = joinNote(sc.EvidenceNote, fmt.Sprintf("%d earlier measurement(s) re-derived: each spoiled by the load generator alone", len(sc.Earlier)))
	}
	return nil
}

// redacted is sc as report.json holds it after Load's redaction: what a
// re-derived scenario is compared in.
func redacted(sc zdv1.Scenario) zdv1.Scenario {
	tmp := zdv1.Report{Scenarios: []zdv1.Scenario{sc}}
	tmp.Redact()
	return tmp.Scenarios[0]
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// verifyLast re-derives the scenario's verdict from its run file.
func (sc *Scenario) verifyLast(ctx context.Context, version string) error {
	if !sc.RunFileExists {
		sc.Evidence = EvidenceUnverified
		sc.EvidenceNote = "no run file to check report.json against: its numbers are unverified"
		if sc.RunFile != "" {
			sc.EvidenceNote = fmt.Sprintf("run file %s not found: report.json's numbers are unverified", sc.RunFile)
		}
		return nil
	}
	opts := []verdict.Option{verdict.WithRunFileName(sc.RunFile)}
	if sc.CriteriaOverrides != nil {
		opts = append(opts, verdict.WithOverrides(*sc.CriteriaOverrides))
	}
	got, err := verdict.AnalyzeFile(ctx, sc.RunFilePath, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		sc.Evidence = EvidenceUnverified
		sc.EvidenceNote = "run file unreadable, report.json's numbers are unverified: " + zdv1.RedactString(err.Error())
		return nil
	}
	got = redacted(got)
	var diffs []string
	if sc.RunFileSHA256 != "" && got.RunFileSHA256 != sc.RunFileSHA256 {
		diffs = append(diffs, fmt.Sprintf("the run file's SHA-256 is %.12s…, report.json names %.12s… (the file changed after the report was written)",
			got.RunFileSHA256, sc.RunFileSHA256))
	}
	if got.Verdict.Status != sc.Verdict.Status {
		diffs = append(diffs, fmt.Sprintf("report.json says %s, the run file gives %s", sc.Verdict.Status, got.Verdict.Status))
	}
	if r, g := sc.Results, got.Results; r.Total != g.Total || r.OK != g.OK || r.Dropped != g.Dropped {
		diffs = append(diffs, fmt.Sprintf("report.json counts %d requests, %d ok, %d dropped; the run file %d, %d, %d",
			r.Total, r.OK, r.Dropped, g.Total, g.OK, g.Dropped))
	}
	detail := !sameJSON(sc.Results, got.Results) || !sameJSON(sc.Verdict, got.Verdict) || len(sc.FailureWindows) != len(got.FailureWindows)
	if written := sc.Run.Report.Run.ToolVersion; detail && len(diffs) == 0 && sc.RunFileSHA256 != "" && version != "" && written != "" && written != version {
		sc.Evidence = EvidenceOtherVersion
		sc.EvidenceNote = fmt.Sprintf("re-derived from %s (SHA-256 %.12s…): same verdict and counts; other figures or wording differ, "+
			"because report.json was written by zerodrop %s and this is %s (re-derive with that version to compare exactly)",
			sc.RunFile, got.RunFileSHA256, written, version)
		return nil
	}
	if detail {
		diffs = append(diffs, "report.json's figures or reasons differ from the run file's")
	}
	if len(diffs) > 0 {
		sc.Evidence = EvidenceMismatch
		sc.EvidenceNote = strings.Join(diffs, "; ")
		return nil
	}
	sc.Evidence = EvidenceVerified
	sc.EvidenceNote = fmt.Sprintf("re-derived from %s (SHA-256 %.12s…): same figures and verdict", sc.RunFile, got.RunFileSHA256)
	if sc.CriteriaOverrides != nil {
		sc.EvidenceNote += " with the criteria overrides report.json records"
	}
	return nil
}

// sameJSON compares two values as their JSON, the form a reader sees.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// Mismatches lists the scenarios whose report.json disagrees with their
// run file.
func Mismatches(runs []*Run) []*Scenario {
	var out []*Scenario
	for _, r := range runs {
		for _, sc := range r.Scenarios {
			if sc.Evidence == EvidenceMismatch {
				out = append(out, sc)
			}
		}
	}
	return out
}

func (sc *Scenario) loadTimeline(ctx context.Context, opts []TimelineOption) {
	if sc.RunFilePath == "" {
		sc.TimelineNote = "timeline unavailable: the report names no run file"
		return
	}
	if !sc.RunFileExists {
		sc.TimelineNote = fmt.Sprintf("timeline unavailable: run file %s not found", sc.RunFile)
		return
	}
	tl, err := BuildTimeline(ctx, sc.RunFilePath, &sc.Scenario, opts...)
	if err != nil {
		sc.TimelineNote = "timeline unavailable: " + zdv1.RedactString(err.Error())
		return
	}
	sc.Timeline = tl
	if c := tl.Corrupt; c.Lines > 0 {
		sc.TimelineNote = fmt.Sprintf("%d unreadable line(s) of the run file skipped (first: line %d); the timeline shows the rest", c.Lines, c.First)
	}
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	s = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if s == "" {
		s = "scenario"
	}
	return s
}

func uniqueAnchor(a string, used map[string]int) string {
	used[a]++
	if n := used[a]; n > 1 {
		return a + "-" + strconv.Itoa(n)
	}
	return a
}
