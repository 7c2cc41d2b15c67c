package suites

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/verdict"
)

// RunPlanned runs scenario sc's cells as plan batches them, with the
// cluster's limits applied (Scenario.OnCluster), and adds every cell's
// result to the collector. It returns the results in the plan's cell order
// and a line on how many witnesses and disruptions it took. The Ginkgo
// driver and Run share it.
func (s *Suite) RunPlanned(ctx context.Context, sc Scenario, plan Plan, collector *Collector) ([]zdv1.Scenario, string, error) {
	start := time.Now()
	var batches [][]Cell
	var run []Cell
	for _, b := range plan.BatchesOf(sc.Name) {
		b = sc.OnCluster(b, s.KubeProxy)
		batches = append(batches, b)
		run = append(run, b...)
	}
	out := s.RunBatches(ctx, sc, batches)
	results := make([]zdv1.Scenario, len(run))
	var errs []error
	again := 0
	for i, c := range run {
		results[i] = CellResult(sc, c, out[i])
		again += len(results[i].Remeasured)
		if err := collector.Add(results[i]); err != nil {
			errs = append(errs, err)
		}
	}
	note := fmt.Sprintf("%s: %d witnesses in %d disruptions (at most %d witnesses each, ZERODROP_WITNESSES), %d measured again (ZERODROP_REMEASURE), in %s",
		sc.Name, len(run), len(batches), s.Settings.WitnessesFor(sc), again, time.Since(start).Round(time.Second))
	return results, note, errors.Join(errs...)
}

// Recheck analyses a cell's run files again, as `zerodrop analyze` does,
// and says where the verdict they give differs from the suite's: the run
// file alone decides it, and a measurement taken again replaced only one
// the load generator spoiled.
func Recheck(ctx context.Context, outDir string, result zdv1.Scenario) error {
	if result.RunFile != "" {
		again, err := verdict.AnalyzeFile(ctx, filepath.Join(outDir, result.RunFile))
		if err != nil {
			return fmt.Errorf("re-analyse %s: %w", result.RunFile, err)
		}
		if !sameVerdict(again.Verdict, result.Verdict) {
			return fmt.Errorf("re-analysing %s alone gives %s, the suite said %s", result.RunFile, again.Verdict.Status, result.Verdict.Status)
		}
	}
	for _, m := range result.Remeasured {
		earlier, err := verdict.AnalyzeFile(ctx, filepath.Join(outDir, m.RunFile))
		if err != nil {
			return fmt.Errorf("re-analyse %s: %w", m.RunFile, err)
		}
		if !sameVerdict(earlier.Verdict, m.Verdict) {
			return fmt.Errorf("re-analysing %s alone gives %s, the suite said %s", m.RunFile, earlier.Verdict.Status, m.Verdict.Status)
		}
		if !earlier.LoadSpoiled() {
			return fmt.Errorf("%s was measured again, but its earlier run %s saw more than a spoiled load", result.Name, m.RunFile)
		}
	}
	return nil
}

// sameVerdict compares two verdicts reason by reason, figures included.
func sameVerdict(a, b zdv1.Verdict) bool { return reflect.DeepEqual(a, b) }

// Passed says whether a cell's result holds for its role: an assertion
// passes, a documentation cell was measured (its hazard reproduced or
// not); "" when it does, else why not.
func Passed(r zdv1.Scenario) string {
	switch {
	case r.Role == zdv1.RoleAssertion && r.Verdict.Status != zdv1.Pass:
		return fmt.Sprintf("%s: %s", r.Name, r.OutcomeText())
	case r.Role != zdv1.RoleAssertion && r.Outcome() == string(zdv1.Error):
		return fmt.Sprintf("%s: the run broke, the hazard was not measured: %s", r.Name, r.OutcomeText())
	}
	return ""
}

// Run runs the registry's cells that filter selects (a Ginkgo label
// filter such as "smoke" or "scenario:drain-node"; "" selects all) on the
// cluster settings name, without Ginkgo: the plan, the cluster, every
// scenario in the registry's order, each cell's verdict checked against its
// run file, and the report in settings.OutDir. It returns the cells'
// results in the plan's order; failed lists the cells that did not hold
// (Passed). An error means the run could not be made or finished.
func Run(ctx context.Context, settings Settings, filter string, logger *slog.Logger, progress func(string)) (results []zdv1.Scenario, failed []string, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if progress == nil {
		progress = func(string) {}
	}
	plan, err := PlanFor(settings, filter)
	if err != nil {
		return nil, nil, err
	}
	if len(plan.Batches) == 0 {
		return nil, nil, fmt.Errorf("the label filter %q selects no cell (zerodrop plan lists them)", filter)
	}
	settings.Images = plan.Images()
	session, err := Open(ctx, settings, logger, progress)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cerr := session.Close(context.WithoutCancel(ctx), progress); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	suite := session.Suite
	suite.Progress = NewProgress(plan, progressFile(settings.OutDir), logger.Info)
	for _, sc := range settings.Scenarios() {
		if len(plan.CellsOf(sc.Name)) == 0 {
			continue
		}
		if sc.NeedsNodepools && settings.Provider == "existing" {
			progress(sc.Name + ": left out: the existing provider cannot add or remove nodepools; run with PROVIDER=kind")
			continue
		}
		// Each batch's clean-ups run when it ends (Suite.RunBatches);
		// the scenario as a whole gets the timeout its estimate gives it.
		sctx, cancel := context.WithTimeout(ctx, Timeout(plan.ScenarioEstimate(sc.Name)))
		res, note, err := suite.RunPlanned(sctx, sc, plan, session.Collector)
		cancel()
		results = append(results, res...)
		progress(note)
		if err != nil {
			return results, failed, fmt.Errorf("%s: %w", sc.Name, err)
		}
		for _, r := range res {
			if why := Passed(r); why != "" {
				failed = append(failed, why)
			}
			if err := Recheck(ctx, settings.OutDir, r); err != nil {
				failed = append(failed, err.Error())
			}
		}
	}
	return results, failed, nil
}
