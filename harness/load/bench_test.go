package load_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/harness/verdict"
)

var (
	memSpan = flag.Duration("zerodrop.mem-span", 30*time.Second, "length of the load in BenchmarkMemoryLongRun (the target is stated for 10m)")
	memRate = flag.Int("zerodrop.mem-rate", 1000, "rate of the load in BenchmarkMemoryLongRun")
)

// BenchmarkMemoryLongRun runs the attributed load with a run file on disk
// for -zerodrop.mem-span at -zerodrop.mem-rate and reports the peak Go heap
// in use, the peak memory obtained from the OS and the process's peak RSS
// (which includes the in-process echo server). The target is
// < 300 MiB over 10 minutes at 1000 rps:
//
//	go test -run '^$' -bench MemoryLongRun -benchtime 1x -timeout 20m ./harness/load/ -zerodrop.mem-span 10m
func BenchmarkMemoryLongRun(b *testing.B) {
	target := "http://" + startEcho(b, "echo-0", "node-0") + "/"
	for range b.N {
		l, err := load.New(load.WithTargets(target), load.WithRate(*memRate), load.WithDuration(*memSpan))
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), "run.jsonl")
		w, err := runfile.Create(path, zdv1.Header{Scenario: zdv1.ScenarioSpec{Name: "memory", Role: zdv1.RoleAssertion,
			Criteria: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}}})
		if err != nil {
			b.Fatal(err)
		}
		run, err := l.Start(context.Background(), w)
		if err != nil {
			b.Fatal(err)
		}
		var peakHeap, peakSys uint64
		var firstHalf, secondHalf uint64 // peak heap in each half, to show flatness
		tick := time.NewTicker(time.Second)
		start := time.Now()
	sample:
		for {
			select {
			case <-run.Done():
				break sample
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peakHeap, peakSys = max(peakHeap, ms.HeapInuse), max(peakSys, ms.Sys)
				if time.Since(start) < *memSpan/2 {
					firstHalf = max(firstHalf, ms.HeapInuse)
				} else {
					secondHalf = max(secondHalf, ms.HeapInuse)
				}
			}
		}
		tick.Stop()
		sum, err := run.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		sc, err := verdict.AnalyzeFile(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		const mib = 1 << 20
		if sc.Results.Dropped > 0 {
			b.Logf("dropped %d: %v", sc.Results.Dropped, sc.Results.ErrorClasses)
			for _, w := range sc.FailureWindows {
				b.Log(verdict.WindowText(w))
			}
		}
		b.ReportMetric(float64(sum.Results), "results")
		b.ReportMetric(sum.Rate(), "req/s")
		b.ReportMetric(float64(sc.Results.Dropped), "dropped")
		b.ReportMetric(float64(peakHeap)/mib, "peak-heap-MiB")
		b.ReportMetric(float64(firstHalf)/mib, "heap-1st-half-MiB")
		b.ReportMetric(float64(secondHalf)/mib, "heap-2nd-half-MiB")
		b.ReportMetric(float64(peakSys)/mib, "peak-sys-MiB")
		b.ReportMetric(peakRSSMiB(b), "peak-rss-MiB")
	}
}

// peakRSSMiB reads VmHWM, the process's peak resident set, from procfs.
func peakRSSMiB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Logf("peak RSS unavailable: %v", err)
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}
