package suites

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"zerodrop/fixtures"
	"zerodrop/harness/scenario"
)

func cellsOf(models ...string) []Cell {
	var out []Cell
	for _, spec := range models {
		name, n, _ := strings.Cut(spec, ":")
		count := 0
		fmt.Sscan(n, &count)
		for i := 0; i < count; i++ {
			out = append(out, Cell{Case: Case{Profile: fixtures.Profile(fmt.Sprint(i))}, Model: Model{Name: name}})
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
	s := &Suite{Settings: Settings{Witnesses: 2}, DeferCleanup: func(func(context.Context) error) { outer++ }}
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
