package suites

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Progress follows a run against its plan: after each batch, a line with
// the cells and disruptions done, the time taken against the estimate and
// what is left, in the log and in OutDir/progress.txt (which a person or a
// CI step can tail).
type Progress struct {
	mu       sync.Mutex
	plan     Plan
	start    time.Time
	cells    int
	batches  int
	again    int           // batches measured again, beyond the plan
	done     map[int]bool  // the plan's batches done
	estimate time.Duration // of the batches done
	path     string
	log      func(msg string, kv ...any)
}

// NewProgress starts following plan; file, when not "", receives a line
// per batch.
func NewProgress(plan Plan, file string, log func(msg string, kv ...any)) *Progress {
	return &Progress{plan: plan, start: time.Now(), path: file, log: log}
}

// Batch records a finished batch of scenario: its cells and what it took
// (the estimate of the plan's batch of the same scenario and size).
func (p *Progress) Batch(scenario string, cells int, took time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = map[int]bool{}
	}
	planned := -1
	for i, b := range p.plan.Batches {
		if !p.done[i] && b.Scenario == scenario && len(b.Cells) >= cells {
			planned = i
			break
		}
	}
	var what string
	if planned < 0 {
		// A batch of cells the load generator spoiled, measured again
		// (Settings.Remeasure): time the plan did not foresee.
		p.again++
		what = "measured again, not in the plan"
	} else {
		p.done[planned] = true
		p.cells += cells
		p.batches++
		p.estimate += p.plan.Batches[planned].Estimate
		what = "planned " + minutes(p.plan.Batches[planned].Estimate)
	}
	elapsed := time.Since(p.start)
	left := max(p.plan.Estimate()-p.estimate, 0)
	line := fmt.Sprintf("%s %s: %d of %d cells, %d of %d disruptions (%d measured again); this batch %s (%s); elapsed %s of %s planned, about %s left",
		time.Now().UTC().Format(time.TimeOnly), scenario, p.cells, p.plan.Cells(), p.batches, len(p.plan.Batches), p.again,
		minutes(took), what, minutes(elapsed), minutes(p.plan.Estimate()), minutes(left))
	if p.log != nil {
		p.log("progress", "line", line)
	}
	if p.path == "" {
		return
	}
	if f, err := os.OpenFile(p.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintln(f, line)
		_ = f.Close()
	}
}

// progressFile is where a run's progress lines go.
func progressFile(outDir string) string { return filepath.Join(outDir, "progress.txt") }
