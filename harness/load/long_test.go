//go:build long

package load_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/harness/verdict"
)

// TestCleanRun60s is the acceptance run: 60 s at 500 rps against the
// real echo server on loopback must report zero dropped.
//
//	go test -tags long -run CleanRun60s -v -timeout 10m ./harness/load/
func TestCleanRun60s(t *testing.T) {
	target := "http://" + startEcho(t, "echo-0", "node-0") + "/"
	l, err := load.New(load.WithTargets(target), load.WithRate(500), load.WithDuration(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	settings := l.Settings()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := runfile.Create(path, zdv1.Header{
		Scenario: zdv1.ScenarioSpec{Name: "clean-60s-500rps", Role: zdv1.RoleAssertion,
			Criteria: zdv1.Criteria{MaxDropped: zdv1.Int64(0), ExpectedClientIP: "127.0.0.1", MinRequests: 29_000}},
		Load: &settings,
	})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sc, err := verdict.AnalyzeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	r := sc.Results
	t.Logf("%d results at %.1f/s, %d dropped, p50 %.2fms p99 %.2fms max %.2fms, verdict %s",
		r.Total, r.AchievedRate, r.Dropped, r.Latency.P50Ms, r.Latency.P99Ms, r.Latency.MaxMs, sc.Verdict.Status)
	if sc.Verdict.Status != zdv1.Pass || r.Dropped != 0 || r.Total != sum.Results {
		t.Fatalf("clean run: verdict %s, dropped %d, total %d (load counted %d): %+v", sc.Verdict.Status, r.Dropped, r.Total, sum.Results, sc.Verdict.Reasons)
	}
}
