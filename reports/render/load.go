package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	zdv1 "zerodrop/apis/v1"
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
}

// Key identifies the environment of a run: a readiness-matrix column.
func (r *Run) Key() Column {
	c := Column{Provider: r.Report.Run.Provider, Kubernetes: r.Report.Run.KubernetesVersion, LB: r.Report.Run.LBImplementation}
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

// LoadOption configures Load.
type LoadOption func(*loadConfig)

type loadConfig struct {
	timeline []TimelineOption
	noPlots  bool
}

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
			if sc.RunFile != "" {
				sc.RunFilePath = sc.RunFile
				if !filepath.IsAbs(sc.RunFilePath) {
					sc.RunFilePath = filepath.Join(dir, sc.RunFile)
				}
				if st, err := os.Stat(sc.RunFilePath); err == nil && st.Mode().IsRegular() {
					sc.RunFileExists = true
				}
			}
			run.Scenarios = append(run.Scenarios, sc)
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
