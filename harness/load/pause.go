package load

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
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
	// pauseSettle is how long after a late tick the machine's figures are read:
	// a few of the kernel's timer ticks (CONFIG_HZ 100 to 1000).
	pauseSettle = 25 * time.Millisecond
)

type pauseSample struct {
	gcCycles uint64
	gcSTW    *metrics.Float64Histogram
	// runDelay (waiting for a CPU) and exec (running) are summed over the
	// process's threads; -1 unknown.
	runDelay, exec time.Duration
	// machine is what every CPU of the machine did (its /proc/stat).
	machine machineTimes
}

// machineTimes is what the machine's CPUs spent their time on, summed over
// them, from the "cpu" line of /proc/stat (proc(5); counted in the
// kernel's ticks, so to about 10 ms): running tasks (user, nice, system;
// system, the kernel working for them, also on its own),
// serving interrupts (irq, softirq: the kernel's own network processing
// among them), idle (idle, iowait), and stolen by the hypervisor. When the
// process's threads waited for a CPU, this says who had them.
type machineTimes struct {
	ok                              bool
	tasks, system, irq, idle, steal time.Duration
}

// parseCPULine reads the "cpu" line at the start of /proc/stat.
func parseCPULine(b []byte) machineTimes {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineTimes{}
	}
	var t [8]time.Duration
	for i := range t {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return machineTimes{}
		}
		// USER_HZ is 100 on every Linux architecture that Go runs on
		// (proc(5): sysconf(_SC_CLK_TCK)).
		t[i] = time.Duration(n) * 10 * time.Millisecond
	}
	// user nice system idle iowait irq softirq steal
	return machineTimes{ok: true, tasks: t[0] + t[1] + t[2], system: t[2], idle: t[3] + t[4], irq: t[5] + t[6], steal: t[7]}
}

// PauseWatch samples the process once per tick for every load that uses
// it: the figures it reads (the Go runtime's, each thread's schedstat, the
// machine's steal) belong to the process, not to one load, so N loads of one
// process need one watch, not N. It runs while at least one load uses it
// and every pause goes to each of them. The zero value is not usable; a
// load without one (WithPauseWatch) watches on its own.
type PauseWatch struct {
	// emitting is held while pauses are handed to subscribers, so that a
	// load that unsubscribed gets none afterwards (its run file may be
	// closed by then).
	emitting sync.Mutex
	mu       sync.Mutex
	subs     map[int]func(zdv1.Event)
	next     int
	stop     chan struct{}
	done     chan struct{}
	// newReader opens what a running watch samples (tests replace it).
	newReader func() (read func() pauseSample, closeRead func())
	// rec, when set, is the flight recorder (WithTrace): one per watch for
	// the watch's whole life, so Max counts over every load that uses it.
	rec *recorder
}

// PauseTrace keeps the process's execution trace of the last seconds in a
// flight recorder (runtime/trace, Go 1.25) while a watch runs, and writes
// it to Dir on each pause of at least Min, at most Max times: what every
// goroutine did, and which one held the CPUs, is then in the file the pause
// event names (`go tool trace FILE`). Tracing costs the process some CPU,
// so it is for finding a stall's cause, not for every run.
type PauseTrace struct {
	Dir string
	Min time.Duration
	Max int
}

// WithTrace starts the flight recorder (see PauseTrace); it records until
// the process ends. Go allows one flight recorder per process: a second
// one fails here.
func (w *PauseWatch) WithTrace(t PauseTrace) error {
	if t.Max <= 0 {
		t.Max = 10
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 5 * time.Second})
	if err := fr.Start(); err != nil {
		return fmt.Errorf("start Go's flight recorder for the pause traces: %w", err)
	}
	w.rec = &recorder{cfg: t, fr: fr}
	return nil
}

// NewPauseWatch returns a pause watch for loads to share.
func NewPauseWatch() *PauseWatch {
	return &PauseWatch{subs: map[int]func(zdv1.Event){}, newReader: func() (func() pauseSample, func()) {
		sm := &sampler{}
		return sm.read, sm.close
	}}
}

// subscribe sends every pause to emit from now on, starting the watch if
// it was idle; the returned function stops that (and the watch, with its
// last user) and waits for it.
func (w *PauseWatch) subscribe(emit func(zdv1.Event)) (unsubscribe func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.next
	w.next++
	w.subs[id] = emit
	if w.stop == nil {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		read, closeRead := w.newReader()
		go w.run(w.stop, w.done, read, closeRead, w.rec)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.subs, id)
			var done chan struct{}
			if len(w.subs) == 0 && w.stop != nil {
				close(w.stop)
				done = w.done
				w.stop, w.done = nil, nil
			}
			w.mu.Unlock()
			// A pause being handed out may still hold emit's copy of the
			// subscribers: wait for it before the load moves on.
			w.emitting.Lock()
			w.emitting.Unlock() //nolint:staticcheck // a barrier, not a critical section
			if done != nil {
				<-done
			}
		})
	}
}

// emit hands e to every subscriber. before, when set, runs first, and only
// when someone will get e (a watch that is stopping may still see a late
// tick no load receives).
func (w *PauseWatch) emit(e zdv1.Event, before func()) {
	w.emitting.Lock()
	defer w.emitting.Unlock()
	w.mu.Lock()
	subs := make([]func(zdv1.Event), 0, len(w.subs))
	for _, f := range w.subs {
		subs = append(subs, f)
	}
	w.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	if before != nil {
		before()
	}
	for _, f := range subs {
		f(e)
	}
}

func (w *PauseWatch) run(stop, done chan struct{}, read func() pauseSample, closeRead func(), rec *recorder) {
	defer close(done)
	if closeRead != nil {
		defer closeRead()
	}
	t := time.NewTicker(pauseTick)
	defer t.Stop()
	prev, last := read(), time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		cur := read()
		if late := now.Sub(last) - pauseTick; late >= pauseMin {
			// The kernel counts steal and interrupt time at its next
			// timer tick: the machine's figures are read again once it
			// has come, so a vCPU the hypervisor held shows as steal, not
			// as a wait. The process's own figures stay those of the pause.
			select {
			case <-stop:
				return
			case <-time.After(pauseSettle):
			}
			woke := time.Now()
			again := read()
			if extra := woke.Sub(now) - pauseSettle; extra >= pauseMin {
				// The stall went on through the wait: one pause, to its end.
				late, now, cur = late+extra, woke.Add(-pauseSettle), again
			}
			cur.machine = again.machine
			e := pauseEvent(last.Add(pauseTick), now, late, prev, cur)
			// A trace is saved only for a pause some load records, so
			// each file is named by a run file.
			w.emit(e, func() { rec.record(late, e) })
			// Neither the wait nor a snapshot's writing is a pause of the
			// load: the next tick is measured from after them.
			cur, now = read(), time.Now()
		}
		prev, last = cur, now
	}
}

// recorder is a watch's flight recorder; nil when it keeps none. A watch
// that stops and starts again may briefly run two goroutines (the old one
// ending), so the count and the writing are under one lock.
type recorder struct {
	cfg     PauseTrace
	fr      *trace.FlightRecorder
	mu      sync.Mutex
	written int
}

// record saves the last seconds of execution trace for a pause late
// enough, while fewer than Max were saved, and names the file in the pause
// event e (or why there is none).
func (r *recorder) record(late time.Duration, e zdv1.Event) {
	if r == nil || late < r.cfg.Min {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written >= r.cfg.Max {
		return
	}
	r.written++
	name := filepath.Join(r.cfg.Dir, "pause-"+e.Time.UTC().Format("20060102T150405.000")+".trace")
	if err := writeTrace(r.fr, r.cfg.Dir, name); err != nil {
		e.Fields["trace_error"] = err.Error()
		return
	}
	e.Fields["trace"] = name
}

// writeTrace writes the recorder's window to name, leaving no partial file
// behind when it fails.
func writeTrace(fr *trace.FlightRecorder, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	_, err = fr.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
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
	delay, exec := time.Duration(-1), time.Duration(-1)
	if a.runDelay >= 0 && b.runDelay >= 0 {
		// A thread that ended takes its count with it: never below zero.
		delay, exec = max(0, b.runDelay-a.runDelay), max(0, b.exec-a.exec)
		f["run_delay_ms"], f["exec_ms"] = msText(delay), msText(exec)
	}
	steal := time.Duration(-1)
	var others, irq time.Duration
	if a.machine.ok && b.machine.ok {
		// Summed over the machine's CPUs; the process's own exec is
		// part of tasks. steal_ms is per CPU, what the cause weighs.
		tasks, stolen := max(0, b.machine.tasks-a.machine.tasks), max(0, b.machine.steal-a.machine.steal)
		steal = stolen / time.Duration(max(1, runtime.NumCPU()))
		irq = max(0, b.machine.irq-a.machine.irq)
		others = max(0, tasks-max(0, exec))
		f["steal_ms"] = msText(steal)
		f["machine_tasks_ms"] = msText(tasks)
		f["machine_system_ms"] = msText(max(0, b.machine.system-a.machine.system))
		f["machine_irq_ms"] = msText(irq)
		f["machine_idle_ms"] = msText(max(0, b.machine.idle-a.machine.idle))
		f["machine_steal_ms"] = msText(stolen)
	}
	f["cause"] = pauseCause(late, stw, delay, exec, steal)
	if c := f["cause"]; (c == "cpu" || c == "unexplained") && a.machine.ok && b.machine.ok && irq >= late/2 && irq > others {
		// The CPUs served interrupts for at least half the lateness and
		// more than they ran other tasks. Interrupt time taken from a
		// running thread counts as neither its wait nor its run, so an
		// unexplained pause may be this too.
		f["cause"] = "irq"
	}
	return zdv1.Event{Time: from, Source: zdv1.SourceLoad, Type: zdv1.EventInstrumentPause,
		Message: "the load generator's process ran " + msText(late) + " ms late (" + f["cause"] + ")", Fields: f}
}

// pauseCause names what accounts for at least half the lateness: a
// stop-the-world collection ("gc"); the hypervisor running something else
// on the machine's CPUs ("steal"); the process's threads waiting for a CPU
// while they hardly ran, so others held the CPUs ("cpu"); running all the
// while, waiting or not, so the process itself wanted more CPU than it
// got or its own goroutines kept the timer's from running ("busy"); else
// none of these measured it ("unexplained").
func pauseCause(late, stw, runDelay, exec, steal time.Duration) string {
	switch {
	case stw >= late/2:
		return "gc"
	case steal >= late/2:
		return "steal"
	case runDelay >= late/2 && exec >= late/2, exec >= late:
		return "busy"
	case runDelay >= late/2:
		return "cpu"
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

// sampler reads what a pause is judged by cheaply enough for 50 reads a
// second beside a load (BenchmarkReadPauseSample: the plain reads cost
// about 0.3 ms on a busy 2-core machine, 1.6% of a CPU per load): the
// thread list is refreshed once a second and each thread's schedstat, and
// the machine's /proc/stat, are re-read through their open files. Owned by
// one goroutine.
type sampler struct {
	threads map[string]*os.File
	listed  time.Time
	stat    *os.File
	statErr bool
	buf     [256]byte
	metrics [2]metrics.Sample
}

func (s *sampler) read() pauseSample {
	now := time.Now()
	out := pauseSample{machine: s.machine()}
	out.exec, out.runDelay = s.schedstat(now)
	s.metrics[0].Name, s.metrics[1].Name = "/gc/cycles/total:gc-cycles", "/sched/pauses/total/gc:seconds"
	metrics.Read(s.metrics[:])
	if s.metrics[0].Value.Kind() == metrics.KindUint64 {
		out.gcCycles = s.metrics[0].Value.Uint64()
	}
	if s.metrics[1].Value.Kind() == metrics.KindFloat64Histogram {
		// Copied: the next Read may reuse the histogram.
		h := s.metrics[1].Value.Float64Histogram()
		out.gcSTW = &metrics.Float64Histogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
	}
	return out
}

// machine reads the "cpu" line of /proc/stat (about 10 us: the kernel
// writes the whole file for each read, 1.2 kB on 2 CPUs).
func (s *sampler) machine() machineTimes {
	if s.stat == nil && !s.statErr {
		f, err := os.Open("/proc/stat")
		if err != nil {
			s.statErr = true // not Linux: machine figures stay unknown
			return machineTimes{}
		}
		s.stat = f
	}
	if s.stat == nil {
		return machineTimes{}
	}
	n, _ := s.stat.ReadAt(s.buf[:], 0)
	return parseCPULine(s.buf[:n])
}

// schedstat sums the first two fields of every thread's
// /proc/self/task/TID/schedstat: nanoseconds on a CPU, and nanoseconds
// runnable but waiting for one. -1, -1 where the kernel does not say (not
// Linux, no schedstats).
func (s *sampler) schedstat(now time.Time) (exec, delay time.Duration) {
	if s.threads == nil || now.Sub(s.listed) >= time.Second {
		s.list(now)
	}
	if len(s.threads) == 0 {
		return -1, -1
	}
	var ex, wait int64
	for tid, f := range s.threads {
		n, err := f.ReadAt(s.buf[:], 0)
		if n == 0 && err != nil {
			f.Close() // the thread ended
			delete(s.threads, tid)
			continue
		}
		e, w, ok := parseSchedstat(s.buf[:n])
		if !ok {
			return -1, -1
		}
		ex, wait = ex+e, wait+w
	}
	return time.Duration(ex), time.Duration(wait)
}

// list opens the schedstat of threads not yet open and closes those gone.
func (s *sampler) list(now time.Time) {
	s.listed = now
	if s.threads == nil {
		s.threads = map[string]*os.File{}
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, e := range ents {
		live[e.Name()] = true
		if _, ok := s.threads[e.Name()]; ok {
			continue
		}
		if f, err := os.Open(filepath.Join("/proc/self/task", e.Name(), "schedstat")); err == nil {
			s.threads[e.Name()] = f
		}
	}
	for tid, f := range s.threads {
		if !live[tid] {
			f.Close()
			delete(s.threads, tid)
		}
	}
}

func (s *sampler) close() {
	for _, f := range s.threads {
		f.Close()
	}
	s.threads = nil
	if s.stat != nil {
		s.stat.Close()
		s.stat = nil
	}
}

// parseSchedstat reads "exec_ns wait_ns timeslices".
func parseSchedstat(b []byte) (exec, wait int64, ok bool) {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, false
	}
	e, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	return e, w, err1 == nil && err2 == nil
}

func msText(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}
