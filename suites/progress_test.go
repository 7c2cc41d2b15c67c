package suites

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Progress counts the plan's batches as they end and a batch measured
// again as time the plan did not foresee, in the log and in its file.
func TestProgressFollowsThePlan(t *testing.T) {
	cells := func(n int) []Cell { return make([]Cell, n) }
	plan := Plan{Batches: []PlannedBatch{
		{Scenario: "control", Cells: cells(4), Estimate: 2 * time.Minute},
		{Scenario: "drain-node", Cells: cells(4), Estimate: 3 * time.Minute},
		{Scenario: "drain-node", Cells: cells(2), Estimate: time.Minute},
	}}
	file := filepath.Join(t.TempDir(), "progress.txt")
	var logged []string
	p := NewProgress(plan, file, func(_ string, kv ...any) { logged = append(logged, kv[1].(string)) })
	p.Batch("control", 4, 2*time.Minute)
	p.Batch("control", 3, time.Minute) // spoiled cells measured again
	p.Batch("drain-node", 4, 3*time.Minute)
	p.Batch("drain-node", 2, time.Minute)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || len(logged) != 4 {
		t.Fatalf("%d lines in the file, %d logged, want 4:\n%s", len(lines), len(logged), b)
	}
	for i, want := range []string{
		"4 of 10 cells, 1 of 3 disruptions (0 measured again)",
		"4 of 10 cells, 1 of 3 disruptions (1 measured again); this batch 1.0 min (measured again, not in the plan)",
		"8 of 10 cells, 2 of 3 disruptions (1 measured again); this batch 3.0 min (planned 3.0 min)",
		"10 of 10 cells, 3 of 3 disruptions (1 measured again)",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %q, want %q", i+1, lines[i], want)
		}
	}
	if !strings.HasSuffix(lines[3], "about 0.0 min left") {
		t.Errorf("last line %q: want nothing left", lines[3])
	}
	var none *Progress
	none.Batch("control", 1, time.Second) // a suite without a plan
}
