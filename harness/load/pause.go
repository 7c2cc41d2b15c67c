package load

import (
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	zdv1 "zerodrop/apis/v1"
)

// A stall of the load generator is a span it did not measure; the run
// file says so either way. What it cannot say by itself is why: the Go
// runtime stopped the world for a collection, the kernel kept the
// process's threads waiting for a CPU (a machine saturated by the cluster
// under test), or something else (a kernel path, swapping). The pause
// watch ticks on its own goroutine, and when a tick comes late it asks the
// runtime (runtime/metrics) and the kernel (each thread's schedstat run
// delay, Documentation/scheduler/sched-stats.rst) what happened in the
// meantime, and records it as an instrument-pause event.

const (
	pauseTick = 20 * time.Millisecond
	// pauseMin is the lateness worth recording: well under the default
	// send-lag bound (50 ms), well over timer jitter.
	pauseMin = 20 * time.Millisecond
)

type pauseSample struct {
	gcCycles uint64
	gcSTW    *metrics.Float64Histogram
	runDelay time.Duration // summed over the process's threads; -1 unknown
}

type pauseWatch struct {
	emit func(zdv1.Event)
	stop chan struct{}
	done chan struct{}
	read func() pauseSample
}

func startPauseWatch(emit func(zdv1.Event)) *pauseWatch {
	w := &pauseWatch{emit: emit, stop: make(chan struct{}), done: make(chan struct{}), read: readPauseSample}
	go w.run()
	return w
}

// Stop ends the watch and waits for it.
func (w *pauseWatch) Stop() {
	close(w.stop)
	<-w.done
}

func (w *pauseWatch) run() {
	defer close(w.done)
	t := time.NewTicker(pauseTick)
	defer t.Stop()
	prev, last := w.read(), time.Now()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		cur := w.read()
		if late := now.Sub(last) - pauseTick; late >= pauseMin {
			w.emit(pauseEvent(last.Add(pauseTick), now, late, prev, cur))
		}
		prev, last = cur, now
	}
}

// pauseEvent says what the runtime and the kernel saw between two samples.
func pauseEvent(from, to time.Time, late time.Duration, a, b pauseSample) zdv1.Event {
	cycles := b.gcCycles - a.gcCycles
	stw := stwBetween(a.gcSTW, b.gcSTW)
	f := map[string]string{
		"from":      from.UTC().Format(time.RFC3339Nano),
		"to":        to.UTC().Format(time.RFC3339Nano),
		"late_ms":   msText(late),
		"gc_cycles": strconv.FormatUint(cycles, 10),
		"gc_stw_ms": msText(stw),
	}
	delay := time.Duration(-1)
	if a.runDelay >= 0 && b.runDelay >= 0 {
		// A thread that ended takes its count with it: never below zero.
		delay = max(0, b.runDelay-a.runDelay)
		f["run_delay_ms"] = msText(delay)
	}
	f["cause"] = pauseCause(late, stw, delay)
	return zdv1.Event{Time: from, Source: zdv1.SourceLoad, Type: zdv1.EventInstrumentPause,
		Message: "the load generator's process ran " + msText(late) + " ms late (" + f["cause"] + ")", Fields: f}
}

// pauseCause names what accounts for at least half the lateness: waiting
// for a CPU, or a stop-the-world collection; else it is unexplained.
func pauseCause(late, stw, runDelay time.Duration) string {
	switch {
	case runDelay >= late/2:
		return "cpu"
	case stw >= late/2:
		return "gc"
	}
	return "unexplained"
}

// stwBetween is an upper bound of the longest stop-the-world pause
// counted between two readings of the pause histogram.
func stwBetween(a, b *metrics.Float64Histogram) time.Duration {
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return 0
	}
	var longest float64
	for i := range b.Counts {
		if b.Counts[i] > a.Counts[i] {
			longest = b.Buckets[i+1] // the bucket's upper edge
		}
	}
	if longest > 1e3 { // +Inf
		longest = b.Buckets[len(b.Buckets)-2]
	}
	return time.Duration(longest * float64(time.Second))
}

func readPauseSample() pauseSample {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	out := pauseSample{runDelay: threadsRunDelay()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		out.gcCycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		out.gcSTW = s[1].Value.Float64Histogram()
	}
	return out
}

// threadsRunDelay sums the second field of every thread's
// /proc/self/task/*/schedstat: nanoseconds spent runnable, waiting for a
// CPU. -1 where the kernel does not say (not Linux, no schedstats).
func threadsRunDelay() time.Duration {
	paths, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil || len(paths) == 0 {
		return -1
	}
	var sum int64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that ended between the glob and the read
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return -1
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return -1
		}
		sum += n
	}
	return time.Duration(sum)
}

func msText(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}
