package suites

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// Batches splits a scenario's cells into the groups that watch one
// disruption each, at most budget witnesses a group (all in one when
// budget < 1). A model's cells stay together where they fit, so a batch
// compares whole columns; a model with more cells than the budget is split
// on its own. The result holds indices into cells, in their order.
func Batches(cells []Cell, budget int) [][]int {
	if budget < 1 || len(cells) <= budget {
		all := make([]int, len(cells))
		for i := range cells {
			all[i] = i
		}
		return [][]int{all}
	}
	// Cells come model by model (Scenario.Cells): cut them into runs of one
	// model, then pack runs into batches.
	var runs [][]int
	for i, c := range cells {
		if i == 0 || c.Model.Name != cells[i-1].Model.Name {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], i)
	}
	var out [][]int
	var cur []int
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	for _, run := range runs {
		if len(cur)+len(run) > budget {
			flush()
		}
		for len(run) > budget {
			out = append(out, run[:budget])
			run = run[budget:]
		}
		cur = append(cur, run...)
	}
	flush()
	return out
}

// cleanupTimeout bounds one batch's clean-up (namespaces, pools).
const cleanupTimeout = 10 * time.Minute

// RunScenario runs sc's body once per batch of cells (Batches with the
// scenario's witness budget, Settings.WitnessesFor) and returns one result per cell, in cells' order:
// RunBatches with that cut. The matrix runs the plan's own batches
// (Plan.BatchesOf) through RunBatches instead, so what runs is what was
// planned, estimated and reported as progress.
func (s *Suite) RunScenario(ctx context.Context, sc Scenario, cells []Cell) []scenario.Result {
	return s.RunBatches(ctx, sc, cut(cells, Batches(cells, s.Settings.WitnessesFor(sc))))
}

// RunBatches runs sc's body once per batch, as given (one disruption each),
// and returns one result per cell, batch after batch in their order.
// Each batch's clean-up (its namespaces, a pool it added or removed) runs
// before the next batch begins, so every batch starts from the default
// topology; a clean-up that fails leaves the cluster in an unknown state, so
// the cells not yet run fail with that error instead of measuring it.
// It runs the cells as given: limits that depend on the cluster are the
// caller's to apply first (Scenario.OnCluster), so the cells it reports
// are the cells that ran.
//
// A cell whose measurement the load generator spoiled
// (zdv1.Scenario.LoadSpoiled: ERROR on the load check alone) is measured
// again under a new disruption (those of one round share it, cut by
// Batches), up to Settings.Remeasure times; its earlier run files move
// aside (scenario.SetAside) and its result lists them
// (zdv1.Scenario.Remeasured). Nothing else is measured again: a cell that
// saw a failure keeps it.
func (s *Suite) RunBatches(ctx context.Context, sc Scenario, batches [][]Cell) []scenario.Result {
	cells := slices.Concat(batches...)
	// Earlier measurements left by a run before this one would pass for
	// this run's (zerodrop analyze attaches a cell's attempt-N).
	for _, c := range cells {
		if err := scenario.ClearEarlier(s.Env.OutDir, sc.CellName(c)); err != nil {
			return failEvery(cells, err)
		}
	}
	out := s.measure(ctx, sc, batches, nil)
	if sc.Control {
		s.recordControls(cells, out)
	}
	return out
}

// cut groups cells by the index groups of Batches.
func cut(cells []Cell, groups [][]int) [][]Cell {
	out := make([][]Cell, len(groups))
	for k, g := range groups {
		out[k] = make([]Cell, len(g))
		for j, i := range g {
			out[k][j] = cells[i]
		}
	}
	return out
}

// RunScenarioAgain runs cells of sc again in this run, as RunScenario does
// but keeping their earlier measurements: each result lists those of
// prior (the cells' results so far, in cells' order) first.
func (s *Suite) RunScenarioAgain(ctx context.Context, sc Scenario, cells []Cell, prior []scenario.Result) []scenario.Result {
	return s.measure(ctx, sc, cut(cells, Batches(cells, s.Settings.WitnessesFor(sc))), prior)
}

// measure runs the batches and measures again the cells whose measurement
// the load spoiled; each result lists prior's earlier measurements (nil:
// none) before its own. Results are in the batches' order.
func (s *Suite) measure(ctx context.Context, sc Scenario, batches [][]Cell, prior []scenario.Result) []scenario.Result {
	var broken error
	cells := slices.Concat(batches...)
	out := s.runBatches(ctx, sc, batches, &broken)
	for i := range out {
		if i < len(prior) {
			out[i].Scenario.Remeasured = slices.Clone(prior[i].Scenario.Remeasured)
		}
	}
	for round := 0; round < s.Settings.Remeasure && broken == nil && ctx.Err() == nil; round++ {
		var again []int
		var earlier []zdv1.Remeasure
		for i := range cells {
			if out[i].Err != nil || !out[i].Scenario.LoadSpoiled() {
				continue
			}
			moved, err := scenario.SetAside(s.Env.OutDir, out[i].Scenario)
			if err != nil {
				// Measuring again would overwrite the only evidence of
				// this measurement: the cell keeps its ERROR, with its
				// run file wherever it now is.
				out[i].Scenario.RunFile = moved.RunFile
				s.Env.Logger.Warn("not measuring again: its evidence cannot be kept", "cell", out[i].Scenario.Name, "err", err)
				continue
			}
			again = append(again, i)
			earlier = append(earlier, moved.AsRemeasure())
		}
		if len(again) == 0 {
			break
		}
		sub := make([]Cell, len(again))
		for j, i := range again {
			sub[j] = cells[i]
			s.Env.Logger.Info("measuring again: the load generator spoiled the measurement", "cell", out[i].Scenario.Name,
				"attempt", len(out[i].Scenario.Remeasured)+2, "reason", out[i].Scenario.Verdict.LoadProblem())
		}
		res := s.runBatches(ctx, sc, cut(sub, Batches(sub, s.Settings.WitnessesFor(sc))), &broken)
		for j, i := range again {
			r := res[j]
			r.Scenario.Remeasured = append(slices.Clone(out[i].Scenario.Remeasured), earlier[j])
			out[i] = r
		}
	}
	return out
}

// runBatches runs the batches one by one; once a clean-up fails
// (*broken), the cells not yet run fail with that error. Results are in
// the batches' order.
func (s *Suite) runBatches(ctx context.Context, sc Scenario, batches [][]Cell, broken *error) []scenario.Result {
	var out []scenario.Result
	for _, batch := range batches {
		began := time.Now()
		var res []scenario.Result
		if *broken != nil {
			res = failEvery(batch, *broken)
		} else {
			res, *broken = s.runBatch(ctx, sc, batch)
		}
		out = append(out, res...)
		s.Progress.Batch(sc.Name, len(batch), time.Since(began))
	}
	return out
}

// runBatch runs sc's body on cells with its clean-ups collected, then runs
// them, last registered first, even when the body panics or ctx ends.
func (s *Suite) runBatch(ctx context.Context, sc Scenario, cells []Cell) (res []scenario.Result, cleanupErr error) {
	var stack []func(context.Context) error
	outer := s.DeferCleanup
	s.DeferCleanup = func(f func(context.Context) error) { stack = append(stack, f) }
	defer func() {
		s.DeferCleanup = outer
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		var errs []error
		for i := len(stack) - 1; i >= 0; i-- {
			if err := stack[i](cctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			cleanupErr = fmt.Errorf("%s: clean-up after a batch of %d cells failed, so the next batch would not start from the default topology: %w", sc.Name, len(cells), err)
		}
	}()
	res = sc.Body(ctx, s, sc, cells)
	if len(res) != len(cells) {
		err := fmt.Errorf("%s: the body returned %d results for %d cells", sc.Name, len(res), len(cells))
		res = failEvery(cells, err)
	}
	return res, nil
}
