package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/harness/verdict"
)

const reportFileName = "report.json"

func analyzeCommand() command {
	return command{name: "analyze", summary: "recompute DIR/report.json from the run files in DIR", run: runAnalyze}
}

const analyzeDescription = `
Reads every run file (*.jsonl) in DIR, or else in its subdirectories (the
suite's out/e2e/<scenario>/run.jsonl), and writes DIR/report.json with one
scenario per run file. The run metadata of an existing report.json (provider,
Kubernetes version, LB) is kept, and so are its implementation block and
scenario set; the --org, --project, --contact ... flags fill or replace
the implementation block (what was tested, for a vendor's submission).
Criteria come from each run file's header unless overridden with the
flags below.

Exit status: 0 every assertion passed, 1 a criterion failed (e.g. something
was dropped), 2 bad input or a run broke (truncated or failed run file).`

func runAnalyze(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "analyze", "[flags] DIR", analyzeDescription)
	maxDropped := fs.Int64("max-dropped", 0, "override: dropped requests still allowed")
	expectIP := fs.String("expect-client-ip", "", "override: client IP the echo server must see")
	gap := fs.Duration("window-gap", 0, "override: merge failures closer than this into one window")
	implF := addImplementationFlags(fs)
	if code, ok := parseFlags(c, fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return badInput(c, "analyze", "want exactly one DIR argument, got %d", fs.NArg())
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return badInput(c, "analyze", "%s is not a directory holding a run (%v)", dir, err)
	}
	runFiles, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err == nil && len(runFiles) == 0 {
		// The suite's layout: one directory per scenario (out/e2e/<scenario>/run.jsonl).
		runFiles, err = filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	}
	// A cell measured again whose last measurement left no run file (it
	// broke before the load began) still has its spoiled ones.
	orphans, oerr := cellsWithOnlyEarlier(dir)
	if err == nil {
		err = oerr
	}
	if err != nil || len(runFiles)+len(orphans) == 0 {
		return badInput(c, "analyze", "no run file (*.jsonl) in %s or its subdirectories", dir)
	}
	slices.Sort(runFiles)

	impl, err := implF.implementation()
	if err != nil {
		return badInput(c, "analyze", "%v", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "max-dropped", "expect-client-ip", "window-gap":
			set[f.Name] = true
		}
	})
	// Only the criteria asked for are replaced; the report records them as
	// criteriaOverrides so nobody mistakes them for the run's own.
	var override *zdv1.Criteria
	if len(set) > 0 {
		override = &zdv1.Criteria{}
		if set["max-dropped"] {
			if *maxDropped < 0 {
				return badInput(c, "analyze", "--max-dropped %d: want 0 or more", *maxDropped)
			}
			override.MaxDropped = zdv1.Int64(*maxDropped)
		}
		if set["expect-client-ip"] {
			if *expectIP == "" {
				return badInput(c, "analyze", "--expect-client-ip needs an address")
			}
			override.ExpectedClientIP = *expectIP
		}
		if set["window-gap"] {
			if *gap <= 0 {
				return badInput(c, "analyze", "--window-gap %v: want a positive duration", *gap)
			}
			override.WindowGapMs = float64(*gap) / float64(time.Millisecond)
		}
	}
	run := zdv1.RunMeta{ToolVersion: c.version, Provider: "none"}
	var extras reportExtras
	if old, err := zdv1.ReadFile(filepath.Join(dir, reportFileName)); err == nil {
		run = old.Run
		extras = reportExtras{impl: old.Implementation, set: old.ScenarioSet}
	}
	if impl != nil {
		if extras.impl == nil {
			extras.impl = &zdv1.Implementation{}
		}
		extras.impl.Merge(*impl)
	}
	_, code := analyzeDir(ctx, c, dir, runFiles, orphans, run, extras, override)
	return code
}

// cellsWithOnlyEarlier are the scenario directories under dir that hold
// earlier measurements (attempt-N/run.jsonl) but no run.jsonl of their own.
func cellsWithOnlyEarlier(dir string) ([]string, error) {
	subs, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range subs {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(d, runFileName)); err == nil {
			continue
		}
		if earlier, err := scenario.EarlierRunFiles(d); err == nil && len(earlier) > 0 {
			out = append(out, d)
		}
	}
	return out, nil
}

// analyzeDir analyzes runFiles into dir/report.json, prints a summary and
// returns the report and the exit code its verdict means.
func analyzeDir(ctx context.Context, c *cli, dir string, runFiles, orphans []string, run zdv1.RunMeta, extras reportExtras,
	override *zdv1.Criteria) (*zdv1.Report, int) {
	rep := zdv1.New(run)
	rep.Implementation, rep.ScenarioSet = extras.impl, extras.set
	for _, path := range runFiles {
		var opts []verdict.Option
		if rel, err := filepath.Rel(dir, path); err == nil {
			// Relative to DIR, as the suite writes it, so a run file in a
			// scenario's directory keeps its directory.
			opts = append(opts, verdict.WithRunFileName(filepath.ToSlash(rel)))
		}
		if override != nil {
			// Applied to the run file's own criteria (header and criteria
			// events): an override changes only what was asked.
			opts = append(opts, verdict.WithOverrides(*override))
		}
		one, err := verdict.BuildReport(ctx, run, []string{path}, opts...)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop: %v\n", err)
			return nil, exitBroken
		}
		// The suite's earlier measurements of this scenario, which the load
		// generator spoiled (scenario.SetAside), stay attached to it.
		if filepath.Base(path) == runFileName {
			earlier, err := earlierOf(ctx, c, dir, filepath.Dir(path))
			if err != nil {
				fmt.Fprintf(c.stderr, "zerodrop: %v\n", err)
				return nil, exitBroken
			}
			one.Scenarios[0].Remeasured = remeasures(earlier)
		}
		rep.Scenarios = append(rep.Scenarios, one.Scenarios...)
		if rep.Run.Start.IsZero() || one.Run.Start.Before(rep.Run.Start) {
			rep.Run.Start = one.Run.Start
		}
		if one.Run.End.After(rep.Run.End) {
			rep.Run.End = one.Run.End
		}
	}
	for _, d := range orphans {
		earlier, err := earlierOf(ctx, c, dir, d)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop: %v\n", err)
			return nil, exitBroken
		}
		if len(earlier) == 0 {
			continue
		}
		last := earlier[len(earlier)-1]
		rep.Scenarios = append(rep.Scenarios, zdv1.Scenario{ScenarioSpec: last.ScenarioSpec, Load: last.Load, Start: last.End, End: last.End,
			Verdict: zdv1.Verdict{Status: zdv1.Error, Reasons: []zdv1.Reason{{Check: "run", Status: zdv1.Error,
				Message: fmt.Sprintf("measured again after the load generator spoiled its measurement, but %s holds no run file of the measurement taken again (it broke before its load began)", d)}}},
			Remeasured: remeasures(earlier)})
	}
	rep.Summarize()
	out := filepath.Join(dir, reportFileName)
	if err := rep.WriteFile(out); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop: %v\n", err)
		return nil, exitBroken
	}
	for _, sc := range rep.Scenarios {
		printScenario(c, sc)
	}
	fmt.Fprintf(c.stdout, "%s -> %s\n", rep.Summary.Status, out)
	return rep, exitCode(rep.Summary.Status)
}

// earlierOf analyses the earlier measurements in scenario directory cell
// (each with its own criteria, as the suite recorded it), run files named
// relative to dir, oldest first; one that saw more than a spoiled load is
// kept, and said, so that zerodrop report flags it.
func earlierOf(ctx context.Context, c *cli, dir, cell string) ([]zdv1.Scenario, error) {
	files, err := scenario.EarlierRunFiles(cell)
	if err != nil {
		return nil, err
	}
	var out []zdv1.Scenario
	for _, e := range files {
		var opts []verdict.Option
		if rel, err := filepath.Rel(dir, e); err == nil {
			opts = append(opts, verdict.WithRunFileName(filepath.ToSlash(rel)))
		}
		sc, err := verdict.AnalyzeFile(ctx, e, opts...)
		if err != nil {
			return nil, err
		}
		if !sc.LoadSpoiled() {
			fmt.Fprintf(c.stderr, "zerodrop: warning: %s is kept as an earlier measurement of %s, but it gives %s, not a measurement the load generator spoiled (zerodrop report will flag it)\n",
				sc.RunFile, sc.Name, sc.Outcome())
		}
		out = append(out, sc)
	}
	return out, nil
}

// remeasures is each analysed earlier measurement as report.json lists it.
func remeasures(scs []zdv1.Scenario) []zdv1.Remeasure {
	var out []zdv1.Remeasure
	for i := range scs {
		out = append(out, scs[i].AsRemeasure())
	}
	return out
}

func printScenario(c *cli, sc zdv1.Scenario) {
	r := sc.Results
	fmt.Fprintf(c.stdout, "%s %s: %d requests at %.1f/s, %d ok, %d dropped (errors %d, non-2xx %d), p50 %.2fms p99 %.2fms max %.2fms, %d failure window(s)\n",
		sc.Outcome(), sc.Name, r.Total, r.AchievedRate, r.OK, r.Dropped, r.Errors, r.Non2xx,
		r.Latency.P50Ms, r.Latency.P99Ms, r.Latency.MaxMs, len(sc.FailureWindows))
	for _, rs := range sc.Verdict.Reasons {
		if rs.Status != zdv1.Pass {
			fmt.Fprintf(c.stdout, "  %s %s: %s\n", rs.Status, rs.Check, rs.Message)
		}
	}
	for k, m := range sc.Remeasured {
		fmt.Fprintf(c.stdout, "  measured again after measurement %d (%s): %s\n", k+1, m.RunFile, m)
	}
	if len(r.Pods) > 0 {
		parts := make([]string, 0, len(r.Pods))
		for _, p := range r.Pods {
			parts = append(parts, fmt.Sprintf("%s %d (%.1f%%)", p.Pod, p.Count, 100*p.Share))
		}
		fmt.Fprintf(c.stdout, "  pods: %s\n", strings.Join(parts, ", "))
	}
	if o := sc.OverridesText(); o != "" {
		fmt.Fprintf(c.stdout, "  criteria overridden by this analysis, not the run's own: %s\n", o)
	}
}

func exitCode(s zdv1.Status) int {
	switch s {
	case zdv1.Pass:
		return exitOK
	case zdv1.Fail:
		return exitFailed
	default:
		return exitBroken
	}
}

func numCPU() int { return runtime.NumCPU() }
