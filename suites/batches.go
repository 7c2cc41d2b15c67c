package suites

import (
	"context"
	"errors"
	"fmt"
	"time"

	"zerodrop/harness/scenario"
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
// suite's witness budget) and returns one result per cell, in cells' order.
// Each batch's clean-up (its namespaces, a pool it added or removed) runs
// before the next batch begins, so every batch starts from the default
// topology; a clean-up that fails leaves the cluster in an unknown state, so
// the cells not yet run fail with that error instead of measuring it.
// It runs the cells as given: limits that depend on the cluster are the
// caller's to apply first (Scenario.OnCluster), so the cells it reports
// are the cells that ran.
func (s *Suite) RunScenario(ctx context.Context, sc Scenario, cells []Cell) []scenario.Result {
	out := make([]scenario.Result, len(cells))
	var broken error
	for _, batch := range Batches(cells, s.Settings.Witnesses) {
		sub := make([]Cell, len(batch))
		for j, i := range batch {
			sub[j] = cells[i]
		}
		var res []scenario.Result
		if broken != nil {
			res = failEvery(sub, broken)
		} else {
			res, broken = s.runBatch(ctx, sc, sub)
		}
		for j, i := range batch {
			out[i] = res[j]
		}
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
