package load

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestPauseCause(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		late, stw, delay, exec, steal time.Duration
		want                          string
	}{
		{80 * ms, 0, 70 * ms, 5 * ms, 0, "cpu"},   // waited, hardly ran: others held the CPUs
		{80 * ms, 0, 70 * ms, 90 * ms, 0, "busy"}, // waited and ran: the process wanted more
		{80 * ms, 0, 5 * ms, 90 * ms, 0, "busy"},  // ran all along: its own goroutines
		{80 * ms, 60 * ms, 5 * ms, 0, 0, "gc"},
		{80 * ms, 60 * ms, 50 * ms, 0, 0, "gc"}, // a collection stops every thread: name it first
		{80 * ms, 0, 5 * ms, 0, 60 * ms, "steal"},
		{80 * ms, 10 * ms, 10 * ms, 0, 0, "unexplained"},
		{80 * ms, 0, -1, -1, -1, "unexplained"}, // the kernel did not say
	} {
		if got := pauseCause(tc.late, tc.stw, tc.delay, tc.exec, tc.steal); got != tc.want {
			t.Errorf("pauseCause(%v, %v, %v, %v, %v) = %s, want %s", tc.late, tc.stw, tc.delay, tc.exec, tc.steal, got, tc.want)
		}
	}
}

func TestSTWBetween(t *testing.T) {
	h := func(counts ...uint64) *metrics.Float64Histogram {
		return &metrics.Float64Histogram{Counts: counts, Buckets: []float64{0, 0.001, 0.01, 0.1, inf()}}
	}
	if got := stwBetween(h(1, 0, 0, 0), h(1, 2, 0, 0)); got != 10*time.Millisecond {
		t.Errorf("longest new pause %v, want the 10 ms bucket's upper edge", got)
	}
	if got := stwBetween(h(0, 0, 0, 0), h(0, 0, 0, 1)); got != 100*time.Millisecond {
		t.Errorf("open-ended bucket %v, want its lower edge, 100 ms", got)
	}
	if got := stwBetween(nil, h(1, 0, 0, 0)); got != 0 {
		t.Errorf("no first reading: %v", got)
	}
}

func inf() float64 { var z float64; return 1 / z }

// A tick that comes late is recorded with what the samples around it say;
// ticks on time are not.
func TestPauseWatchRecordsALateTick(t *testing.T) {
	var mu sync.Mutex
	var got []zdv1.Event
	n := 0
	w := NewPauseWatch()
	w.newReader = func() (func() pauseSample, func()) {
		return func() pauseSample {
			n++
			if n == 3 {
				// The process stops for 120 ms, all of it waiting for a
				// CPU, as the next sample says.
				time.Sleep(120 * time.Millisecond)
				return pauseSample{}
			}
			if n > 3 {
				return pauseSample{runDelay: 120 * time.Millisecond, exec: 3 * time.Millisecond}
			}
			return pauseSample{}
		}, nil
	}
	unsubscribe := w.subscribe(func(e zdv1.Event) { mu.Lock(); got = append(got, e); mu.Unlock() })
	time.Sleep(300 * time.Millisecond)
	unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	// A loaded machine may add real late ticks: the one the fake made is
	// the one whose run delay the fake reported.
	var e zdv1.Event
	for _, g := range got {
		if g.Fields["run_delay_ms"] == "120.0" {
			e = g
		}
	}
	if e.Type == "" {
		t.Fatalf("no pause event with the fake's 120 ms run delay among %d: %+v", len(got), got)
	}
	if e.Type != zdv1.EventInstrumentPause || e.Source != zdv1.SourceLoad || e.Fields["cause"] != "cpu" || e.Fields["run_delay_ms"] != "120.0" {
		t.Errorf("event %+v", e)
	}
	if !strings.Contains(e.Message, "ms late (cpu)") {
		t.Errorf("message %q", e.Message)
	}
}

// The kernel's figures are read where it gives them (Linux with
// schedstats): a sum over the threads, never negative.
func TestReadPauseSample(t *testing.T) {
	sm := &sampler{}
	defer sm.close()
	_ = sm.read()
	s := sm.read()
	if s.gcSTW == nil {
		t.Error("no stop-the-world histogram from runtime/metrics")
	}
	if s.runDelay < -1 || s.exec < -1 || (s.exec < 0) != (s.runDelay < 0) {
		t.Errorf("run delay %v exec %v", s.runDelay, s.exec)
	}
}

// BenchmarkReadPauseSample is the watch's cost per tick (50 ticks a
// second per running load): what the instrument spends watching itself,
// the sampler beside the plain reads it replaced (every thread's schedstat
// and /proc/stat opened and read on every tick).
func BenchmarkReadPauseSample(b *testing.B) {
	b.Run("sampler", func(b *testing.B) {
		sm := &sampler{}
		defer sm.close()
		for range b.N {
			_ = sm.read()
		}
	})
	b.Run("plain", func(b *testing.B) {
		for range b.N {
			paths, _ := filepath.Glob("/proc/self/task/*/schedstat")
			for _, p := range paths {
				if c, err := os.ReadFile(p); err == nil {
					_, _, _ = parseSchedstat(c)
				}
			}
			if b, err := os.ReadFile("/proc/stat"); err == nil {
				_ = parseCPULine(b)
			}
			s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}}
			metrics.Read(s)
		}
	})
}

// The sampler re-reads open files: what it reads must move as the
// process runs, or every pause would look unexplained.
func TestSamplerSeesTheProcessRun(t *testing.T) {
	sm := &sampler{}
	defer sm.close()
	a := sm.read()
	if a.exec < 0 {
		t.Skip("the kernel gives no schedstat here")
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
	}
	b := sm.read()
	if d := b.exec - a.exec; d < 20*time.Millisecond {
		t.Errorf("200 ms of spinning read as %v of CPU time", d)
	}
}

// Loads of one process share one watch: one reader while any of them runs,
// every pause to each, stopped with the last and started again with the next.
func TestPauseWatchShared(t *testing.T) {
	var mu sync.Mutex
	opened, closed := 0, 0
	w := NewPauseWatch()
	w.newReader = func() (func() pauseSample, func()) {
		mu.Lock()
		opened++
		mu.Unlock()
		n := 0
		return func() pauseSample {
				n++
				if n == 2 {
					time.Sleep(80 * time.Millisecond) // one late tick
				}
				return pauseSample{}
			}, func() {
				mu.Lock()
				closed++
				mu.Unlock()
			}
	}
	var a, b []zdv1.Event
	stopA := w.subscribe(func(e zdv1.Event) { mu.Lock(); a = append(a, e); mu.Unlock() })
	stopB := w.subscribe(func(e zdv1.Event) { mu.Lock(); b = append(b, e); mu.Unlock() })
	time.Sleep(250 * time.Millisecond)
	stopA()
	mu.Lock()
	if opened != 1 || closed != 0 {
		t.Errorf("two loads: reader opened %d and closed %d times, want one open reader", opened, closed)
	}
	if len(a) == 0 || len(b) == 0 {
		t.Errorf("the late tick reached %d and %d subscribers' events, want both", len(a), len(b))
	}
	mu.Unlock()
	stopB()
	stopB() // twice is harmless
	mu.Lock()
	if closed != 1 {
		t.Errorf("after the last load left: reader closed %d times, want 1", closed)
	}
	mu.Unlock()
	stopC := w.subscribe(func(zdv1.Event) {})
	stopC()
	mu.Lock()
	defer mu.Unlock()
	if opened != 2 || closed != 2 {
		t.Errorf("a later load: reader opened %d, closed %d; want the watch started again (2, 2)", opened, closed)
	}
}

// With a flight recorder, a pause long enough writes the last seconds of
// execution trace and names the file in its event, at most Max over the
// watch's life (it stops and starts again between loads); a second recorder
// in the same process cannot start (Go allows one).
func TestPauseWatchWritesTrace(t *testing.T) {
	dir := t.TempDir()
	w := NewPauseWatch()
	if err := w.WithTrace(PauseTrace{Dir: dir, Min: 100 * time.Millisecond, Max: 2}); err != nil {
		t.Fatal(err)
	}
	defer w.rec.fr.Stop()
	if err := NewPauseWatch().WithTrace(PauseTrace{Dir: dir}); err == nil || !strings.Contains(err.Error(), "flight recorder") {
		t.Errorf("second recorder: %v, want an error naming the flight recorder", err)
	}
	n := 0
	w.newReader = func() (func() pauseSample, func()) {
		return func() pauseSample {
			n++
			if n%5 == 3 {
				time.Sleep(150 * time.Millisecond) // a late tick in each use of the watch
			}
			return pauseSample{runDelay: -1}
		}, nil
	}
	var mu sync.Mutex
	var got []zdv1.Event
	for range 3 { // three loads one after the other: the watch stops and starts
		unsubscribe := w.subscribe(func(e zdv1.Event) { mu.Lock(); got = append(got, e); mu.Unlock() })
		time.Sleep(300 * time.Millisecond)
		unsubscribe()
	}
	mu.Lock()
	defer mu.Unlock()
	var traced []string
	for _, e := range got {
		if e.Fields["trace_error"] != "" {
			t.Errorf("trace error: %s", e.Fields["trace_error"])
		}
		if f := e.Fields["trace"]; f != "" {
			traced = append(traced, f)
		}
	}
	if len(traced) != 2 {
		t.Fatalf("%d pauses named a trace, want 2 (Max, over three loads): %+v", len(traced), got)
	}
	for _, f := range traced {
		st, err := os.Stat(f)
		if err != nil || st.Size() == 0 || filepath.Dir(f) != dir {
			t.Errorf("trace file %s: %v (%v)", f, err, st)
		}
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 2 {
		t.Errorf("%d files in the trace directory, want 2", len(files))
	}
}

func TestParseCPULine(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		in   string
		want machineTimes
	}{
		{"cpu  100 2 50 900 10 3 7 4 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n",
			machineTimes{ok: true, tasks: 1520 * ms, system: 500 * ms, idle: 9100 * ms, irq: 100 * ms, steal: 40 * ms}},
		{"cpu0 1 2 3 4 5 6 7 8\n", machineTimes{}}, // not the machine's line
		{"cpu  1 2 3\n", machineTimes{}},           // too short
		{"cpu  1 2 x 4 5 6 7 8\n", machineTimes{}}, // not a number
		{"", machineTimes{}},
	} {
		if got := parseCPULine([]byte(tc.in)); got != tc.want {
			t.Errorf("parseCPULine(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// A pause the process waited through while the machine's CPUs served
// interrupts more than they ran other tasks is "irq"; while they ran
// other tasks, "cpu"; the machine's figures are in the event either way.
func TestPauseEventMachine(t *testing.T) {
	ms := time.Millisecond
	base := pauseSample{runDelay: 0, exec: 0, machine: machineTimes{ok: true}}
	at := func(delay, exec, tasks, irq, idle time.Duration) pauseSample {
		return pauseSample{runDelay: delay, exec: exec, machine: machineTimes{ok: true, tasks: tasks, irq: irq, idle: idle}}
	}
	from := time.Date(2026, 11, 24, 6, 2, 27, 0, time.UTC)
	for _, tc := range []struct {
		name string
		b    pauseSample
		want string
	}{
		{"others ran", at(170*ms, 5*ms, 150*ms, 20*ms, 0), "cpu"},
		{"interrupts", at(170*ms, 5*ms, 40*ms, 120*ms, 0), "irq"},
		{"own work", at(10*ms, 90*ms, 100*ms, 0, 60*ms), "busy"},
		// Steal is weighed per CPU: every CPU lost the whole lateness.
		{"hypervisor", pauseSample{runDelay: 170 * ms, exec: 5 * ms, machine: machineTimes{ok: true, steal: time.Duration(runtime.NumCPU()) * 80 * ms}}, "steal"},
	} {
		e := pauseEvent(from, from.Add(80*ms), 80*ms, base, tc.b)
		if e.Fields["cause"] != tc.want {
			t.Errorf("%s: cause %q, want %q (%v)", tc.name, e.Fields["cause"], tc.want, e.Fields)
		}
		for _, k := range []string{"machine_tasks_ms", "machine_system_ms", "machine_irq_ms", "machine_idle_ms", "machine_steal_ms"} {
			if _, ok := e.Fields[k]; !ok {
				t.Errorf("%s: no %s in %v", tc.name, k, e.Fields)
			}
		}
	}
	// Unreadable machine figures leave them out.
	e := pauseEvent(from, from.Add(80*ms), 80*ms, pauseSample{}, pauseSample{runDelay: 170 * ms})
	if _, ok := e.Fields["machine_tasks_ms"]; ok {
		t.Errorf("machine figures without a reading: %v", e.Fields)
	}
}
