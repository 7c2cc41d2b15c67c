package suites

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/scenario"
)

func cellsOf(models ...string) []Cell {
	var out []Cell
	for _, spec := range models {
		name, n, _ := strings.Cut(spec, ":")
		count := 0
		fmt.Sscan(n, &count)
		for i := 0; i < count; i++ {
			out = append(out, Cell{Case: Case{Hardening: fixtures.Hardening(fmt.Sprint(i))}, Model: Model{Name: name}})
		}
	}
	return out
}

func TestBatches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cells  []Cell
		budget int
		want   [][]int
	}{
		{"all fit", cellsOf("metallb:4", "gcp-nlb:4"), 8, [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}},
		{"no budget", cellsOf("metallb:4", "gcp-nlb:4"), 0, [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}},
		{"whole models per batch", cellsOf("metallb:4", "gcp-nlb:4", "gclb:4"), 8, [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11}}},
		{"a model that does not fit moves on", cellsOf("metallb:2", "gcp-nlb:4", "gclb:2"), 5, [][]int{{0, 1}, {2, 3, 4, 5}, {6, 7}}},
		{"a model bigger than the budget is split", cellsOf("metallb:5", "gclb:1"), 2, [][]int{{0, 1}, {2, 3}, {4, 5}}},
		{"one witness at a time", cellsOf("metallb:2", "gclb:1"), 1, [][]int{{0}, {1}, {2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Batches(tc.cells, tc.budget)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Batches = %v, want %v", got, tc.want)
			}
			seen := map[int]bool{}
			for _, b := range got {
				if tc.budget > 0 && len(b) > tc.budget {
					t.Errorf("batch %v over the budget %d", b, tc.budget)
				}
				for _, i := range b {
					if seen[i] {
						t.Errorf("cell %d in two batches", i)
					}
					seen[i] = true
				}
			}
			if len(seen) != len(tc.cells) {
				t.Errorf("%d of %d cells in a batch", len(seen), len(tc.cells))
			}
		})
	}
}

// RunScenario runs the body once per batch, runs each batch's clean-ups
// (last registered first) before the next batch, and returns results in
// the cells' order. A failed clean-up fails the cells not yet run.
func TestRunScenarioBatches(t *testing.T) {
	cells := cellsOf("metallb:2", "gcp-nlb:2", "gclb:2")
	var log []string
	body := func(_ context.Context, s *Suite, _ Scenario, cells []Cell) []scenario.Result {
		name := cells[0].Model.Name
		log = append(log, "body "+name)
		s.Cleanup(func(context.Context) error { log = append(log, "ns "+name); return nil })
		s.Cleanup(func(context.Context) error {
			log = append(log, "pool "+name)
			if name == "gcp-nlb" {
				return errors.New("pool-b did not come back")
			}
			return nil
		})
		out := make([]scenario.Result, len(cells))
		for i, c := range cells {
			out[i].Err = errors.New("ran " + c.Model.Name)
		}
		return out
	}
	outer := 0
	s := &Suite{Settings: Settings{Witnesses: 2}, Env: &scenario.Env{OutDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		DeferCleanup: func(func(context.Context) error) { outer++ }}
	res := s.RunScenario(context.Background(), Scenario{Name: "drain", Body: body}, cells)

	if want := []string{"body metallb", "pool metallb", "ns metallb", "body gcp-nlb", "pool gcp-nlb", "ns gcp-nlb"}; !reflect.DeepEqual(log, want) {
		t.Errorf("order %q, want %q", log, want)
	}
	if outer != 0 {
		t.Errorf("%d clean-ups reached the outer registry, want every one run by its batch", outer)
	}
	for i, want := range []string{"ran metallb", "ran metallb", "ran gcp-nlb", "ran gcp-nlb", "pool-b did not come back", "pool-b did not come back"} {
		if res[i].Err == nil || !strings.Contains(res[i].Err.Error(), want) {
			t.Errorf("cell %d: %v, want %q", i, res[i].Err, want)
		}
	}
	if s.DeferCleanup == nil {
		t.Error("RunScenario did not put the outer clean-up registry back")
	}
}

// RunBatches runs the batches it is given, each as one disruption, even
// where Batches would cut the same cells otherwise (a shard's share of a
// plan dealt longest first), and returns the results in their order.
func TestRunBatchesRunsThePlansBatches(t *testing.T) {
	cells := cellsOf("metallb:1", "gcp-nlb:2", "gclb:1")
	given := [][]Cell{{cells[0], cells[1]}, {cells[2], cells[3]}}
	var seen [][]string
	body := func(_ context.Context, _ *Suite, _ Scenario, cells []Cell) []scenario.Result {
		var names []string
		out := make([]scenario.Result, len(cells))
		for i, c := range cells {
			names = append(names, c.Model.Name)
			out[i].Err = errors.New("ran " + c.Model.Name)
		}
		seen = append(seen, names)
		return out
	}
	s := &Suite{Settings: Settings{Witnesses: 2}, Env: &scenario.Env{OutDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	if cut := Batches(cells, 2); reflect.DeepEqual(cut, [][]int{{0, 1}, {2, 3}}) {
		t.Fatalf("test setup: Batches cuts these cells as given (%v); the test would not tell them apart", cut)
	}
	res := s.RunBatches(context.Background(), Scenario{Name: "drain", Body: body}, given)
	if want := [][]string{{"metallb", "gcp-nlb"}, {"gcp-nlb", "gclb"}}; !reflect.DeepEqual(seen, want) {
		t.Errorf("disruptions saw %q, want the batches given %q", seen, want)
	}
	for i, want := range []string{"ran metallb", "ran gcp-nlb", "ran gcp-nlb", "ran gclb"} {
		if res[i].Err == nil || res[i].Err.Error() != want {
			t.Errorf("result %d: %v, want %q", i, res[i].Err, want)
		}
	}
}

// RunScenario measures again, under a disruption of their own, the cells
// whose measurement the load generator spoiled, up to Settings.Remeasure
// times, and keeps each spoiled measurement's evidence; a cell that saw a
// failure is never measured again.
func TestRunScenarioRemeasures(t *testing.T) {
	load := zdv1.Reason{Check: zdv1.CheckLoad, Status: zdv1.Error, Message: "the load generator was 58ms behind its schedule"}
	spoiled := zdv1.Verdict{Status: zdv1.Error, Reasons: []zdv1.Reason{{Check: "dropped", Status: zdv1.Pass}, load}}
	failed := zdv1.Verdict{Status: zdv1.Error, Reasons: []zdv1.Reason{{Check: "dropped", Status: zdv1.Fail}, load}}
	passed := zdv1.Verdict{Status: zdv1.Pass, Reasons: []zdv1.Reason{{Check: "dropped", Status: zdv1.Pass}}}
	// plan[cell] is the verdict of each of the cell's measurements.
	plan := [][]zdv1.Verdict{
		{spoiled, passed},           // a stall, then a clean measurement
		{failed},                    // dropped while stalled: stands
		{spoiled, spoiled, spoiled}, // spoiled every time: ERROR after the last
		{passed},
	}
	cells := cellsOf("metallb:4")
	out := t.TempDir()
	measured := make([]int, len(cells))
	var calls [][]string
	body := func(_ context.Context, _ *Suite, _ Scenario, run []Cell) []scenario.Result {
		res := make([]scenario.Result, len(run))
		var names []string
		for j, c := range run {
			i := int(c.Hardening[0] - '0')
			names = append(names, c.Name())
			rel := scenario.DirName(c.Name()) + "/run.jsonl"
			if err := os.MkdirAll(filepath.Join(out, scenario.DirName(c.Name())), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, rel), []byte(fmt.Sprintf("measurement %d\n", measured[i]+1)), 0o644); err != nil {
				t.Fatal(err)
			}
			res[j].Scenario = zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: c.Name(), Role: zdv1.RoleAssertion},
				RunFile: rel, Verdict: plan[i][measured[i]]}
			measured[i]++
		}
		calls = append(calls, names)
		return res
	}
	s := &Suite{Settings: Settings{Witnesses: 4, Remeasure: 2}, Env: &scenario.Env{OutDir: out, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		DeferCleanup: func(func(context.Context) error) {}}
	sc := Scenario{Name: "rolling-update", Body: body}
	// An earlier run's spoiled measurement of cell 3 is not this run's.
	stale := filepath.Join(out, scenario.DirName(sc.CellName(cells[3])), "attempt-1")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "run.jsonl"), []byte("an earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.RunScenario(context.Background(), sc, cells)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an earlier run's attempt-1 of cell 3 is still there (%v)", err)
	}

	n := func(i int) string { return cells[i].Name() }
	if want := [][]string{{n(0), n(1), n(2), n(3)}, {n(0), n(2)}, {n(2)}}; !reflect.DeepEqual(calls, want) {
		t.Errorf("disruptions %q, want %q", calls, want)
	}
	for i, want := range []struct {
		status  zdv1.Status
		earlier int
	}{{zdv1.Pass, 1}, {zdv1.Error, 0}, {zdv1.Error, 2}, {zdv1.Pass, 0}} {
		got := res[i].Scenario
		if got.Verdict.Status != want.status || len(got.Remeasured) != want.earlier {
			t.Errorf("cell %d: %s with %d earlier measurements, want %s with %d", i, got.Verdict.Status, len(got.Remeasured), want.status, want.earlier)
			continue
		}
		// Each earlier measurement is its own run file, moved aside intact;
		// the last one is in the cell's own place.
		for k, m := range got.Remeasured {
			b, err := os.ReadFile(filepath.Join(out, m.RunFile))
			if err != nil || string(b) != fmt.Sprintf("measurement %d\n", k+1) || m.Verdict.Status != zdv1.Error {
				t.Errorf("cell %d earlier %d: %s reads %q (%v), verdict %s", i, k, m.RunFile, b, err, m.Verdict.Status)
			}
		}
		if b, err := os.ReadFile(filepath.Join(out, got.RunFile)); err != nil || string(b) != fmt.Sprintf("measurement %d\n", measured[i]) {
			t.Errorf("cell %d: %s reads %q (%v), want the last measurement", i, got.RunFile, b, err)
		}
	}

	// Run again in the same run (zerodrop test's cells not met): the
	// earlier measurements stay on disk and in the results.
	measured[0], measured[2] = 0, 0
	calls = nil
	again := s.RunScenarioAgain(context.Background(), sc, []Cell{cells[0], cells[2]}, []scenario.Result{res[0], res[2]})
	if n := len(again[0].Scenario.Remeasured); n != 2 {
		t.Errorf("cell 0 run again: %d earlier measurements, want the one before and this round's", n)
	}
	if n := len(again[1].Scenario.Remeasured); n != 4 {
		t.Errorf("cell 2 run again: %d earlier measurements, want the two before and this round's two", n)
	}
	for _, r := range again {
		for _, m := range r.Scenario.Remeasured {
			if _, err := os.Stat(filepath.Join(out, m.RunFile)); err != nil {
				t.Errorf("%s: earlier %s: %v", r.Scenario.Name, m.RunFile, err)
			}
		}
	}

	// ZERODROP_REMEASURE=0: every verdict as first measured.
	measured = make([]int, len(cells))
	calls = nil
	s.Settings.Remeasure = 0
	res = s.RunScenario(context.Background(), sc, cells)
	if len(calls) != 1 || res[0].Scenario.Verdict.Status != zdv1.Error || len(res[0].Scenario.Remeasured) != 0 {
		t.Errorf("Remeasure 0: %d disruptions, cell 0 %s with %d earlier", len(calls), res[0].Scenario.Verdict.Status, len(res[0].Scenario.Remeasured))
	}
}
