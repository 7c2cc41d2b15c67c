package load_test

import (
	"context"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"zerodrop/harness/load"
	"zerodrop/harness/runfile"
	"zerodrop/harness/verdict"
	"zerodrop/reports"
)

var (
	benchSpan   = flag.Duration("zerodrop.bench-span", time.Second, "length of each load in BenchmarkAttributedVsVegeta")
	benchRounds = flag.Int("zerodrop.bench-rounds", 4, "ABBA rounds in BenchmarkAttributedVsVegeta")
	memSpan     = flag.Duration("zerodrop.mem-span", 30*time.Second, "length of the load in BenchmarkMemoryLongRun (the target is stated for 10m)")
	memRate     = flag.Int("zerodrop.mem-rate", 1000, "rate of the load in BenchmarkMemoryLongRun")
)

// BenchmarkAttributedVsVegeta runs the vegeta attacker alone and the
// attributed load (classifying transport, echo parsing, run file on disk)
// against the same loopback echo server in the same process, in short
// interleaved ABBA rounds so that drift in the machine's load hits both
// alike, and reports both achieved rates, their ratio and the median of the
// per-round ratios (target >= 0.9). "rate=1000" is a paced run; "rate=max" asks for more than two
// cores can deliver with 64 workers, so it measures throughput overhead.
//
//	go test -run '^$' -bench AttributedVsVegeta -benchtime 1x ./harness/load/
func BenchmarkAttributedVsVegeta(b *testing.B) {
	target := "http://" + startEcho(b, "echo-0", "node-0") + "/"
	for _, rate := range []int{1000, 20000} {
		name := "rate=" + strconv.Itoa(rate)
		if rate == 20000 {
			name = "rate=max"
		}
		b.Run(name, func(b *testing.B) {
			var vegetaN, oursN float64
			var vegetaD, oursD time.Duration
			var ratios []float64 // per ABBA round: robust to bursts of load from elsewhere
			for range b.N * *benchRounds {
				var rn, rd [2]float64 // [vegeta, ours] results and seconds in this round
				for _, ours := range []bool{false, true, true, false} {
					n, d := benchOnce(b, target, rate, ours)
					i := 0
					if ours {
						i = 1
						oursN, oursD = oursN+n, oursD+d
					} else {
						vegetaN, vegetaD = vegetaN+n, vegetaD+d
					}
					rn[i], rd[i] = rn[i]+n, rd[i]+d.Seconds()
				}
				ratios = append(ratios, (rn[1]/rd[1])/(rn[0]/rd[0]))
			}
			slices.Sort(ratios)
			vr, or := vegetaN/vegetaD.Seconds(), oursN/oursD.Seconds()
			b.ReportMetric(vr, "vegeta-req/s")
			b.ReportMetric(or, "zerodrop-req/s")
			b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
			b.ReportMetric(or/vr, "ratio")
		})
	}
}

func benchOnce(b *testing.B, target string, rate int, ours bool) (float64, time.Duration) {
	b.Helper()
	const workers = 64
	if !ours {
		tr := &http.Transport{MaxIdleConnsPerHost: load.DefaultConnections, DisableCompression: true}
		att := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: tr, Timeout: load.DefaultTimeout}),
			vegeta.Workers(workers), vegeta.MaxWorkers(workers), vegeta.MaxBody(64<<10))
		start := time.Now()
		var n, okN float64
		for r := range att.Attack(vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: target}),
			vegeta.ConstantPacer{Freq: rate, Per: time.Second}, *benchSpan, "bench") {
			n++
			if r.Code == 200 {
				okN++
			}
		}
		d := time.Since(start)
		tr.CloseIdleConnections()
		if okN != n {
			b.Fatalf("vegeta alone: %v of %v requests failed on loopback", n-okN, n)
		}
		return n, d
	}
	l, err := load.New(load.WithTargets(target), load.WithRate(rate), load.WithDuration(*benchSpan), load.WithWorkers(workers, workers))
	if err != nil {
		b.Fatal(err)
	}
	w, err := runfile.Create(filepath.Join(b.TempDir(), "run.jsonl"), runfile.Meta{})
	if err != nil {
		b.Fatal(err)
	}
	sum, err := l.Run(context.Background(), w)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if sum.Dropped != 0 {
		b.Fatalf("attributed load: %d of %d requests dropped on loopback: %v", sum.Dropped, sum.Results, sum.ErrorClasses)
	}
	return float64(sum.Results), sum.Ended.Sub(sum.Started)
}

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
		w, err := runfile.Create(path, runfile.Meta{Scenario: reports.ScenarioSpec{Name: "memory", Role: reports.RoleAssertion,
			Criteria: reports.Criteria{MaxDropped: reports.Int64(0)}}})
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
