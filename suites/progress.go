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
	p.cells += cells
	p.batches++
	est := time.Duration(0)
	for _, b := range p.plan.Batches {
		if b.Scenario == scenario && len(b.Cells) == cells {
			est = b.Estimate
			break
		}
	}
	p.estimate += est
	elapsed := time.Since(p.start)
	left := max(p.plan.Estimate()-p.estimate, 0)
	line := fmt.Sprintf("%s %s: %d of %d cells, %d of %d disruptions; this batch %s (planned %s); elapsed %s of %s planned, about %s left",
		time.Now().UTC().Format(time.TimeOnly), scenario, p.cells, p.plan.Cells(), p.batches, len(p.plan.Batches),
		minutes(took), minutes(est), minutes(elapsed), minutes(p.plan.Estimate()), minutes(left))
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
