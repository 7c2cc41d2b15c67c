package verdict

import (
	"slices"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// steadyRun is 100/s from t0 for 3 s (due at 10 ms, 20 ms, ...), with edit
// applied to each result; a nil result is left out (never sent).
func steadyRun(edit func(ms int, r *zdv1.Result) *zdv1.Result) []zdv1.Result {
	var rs []zdv1.Result
	for ms := 10; ms <= 3000; ms += 10 {
		r := ok(ms, "a", "n")
		if p := edit(ms, &r); p != nil {
			rs = append(rs, *p)
		}
	}
	return rs
}

func keep(_ int, r *zdv1.Result) *zdv1.Result { return r }

func loadEvents(extra ...zdv1.Event) []zdv1.Event {
	return append([]zdv1.Event{
		{Time: t0, Source: zdv1.SourceLoad, Type: zdv1.EventLoadStart, Message: "load started"},
		{Time: at(3100), Source: zdv1.SourceLoad, Type: zdv1.EventLoadStop, Message: "load stopped",
			Fields: map[string]string{"last_due": at(3000).Format(time.RFC3339Nano)}},
	}, extra...)
}

func TestDeliveryCheck(t *testing.T) {
	tests := []struct {
		name    string
		results []zdv1.Result
		events  []zdv1.Event
		status  zdv1.Status
		want    []string
		unsent  int64
		late    int64
	}{
		{
			name: "kept its schedule", results: steadyRun(keep), events: loadEvents(),
			status: zdv1.Pass, want: []string{"load delivered as scheduled", "3 whole seconds"},
		},
		{
			// The generator was stopped 1.20-1.60 s, then skipped what it
			// could no longer send in time and said so.
			name: "stalled and skipped",
			results: steadyRun(func(ms int, r *zdv1.Result) *zdv1.Result {
				if ms > 1200 && ms <= 1600 {
					return nil
				}
				return r
			}),
			events: loadEvents(zdv1.Event{Time: at(1210), Source: zdv1.SourceLoad, Type: zdv1.EventUnsent,
				Fields: map[string]string{"from": at(1210).Format(time.RFC3339Nano), "to": at(1600).Format(time.RFC3339Nano),
					"requests": "40", "reason": "the load generator was 400ms behind its schedule (bound 50ms)"}}),
			status: zdv1.Error, unsent: 40,
			want: []string{"could not deliver", "1 of 3 whole seconds below 97% of 100/s (12:00:01.000 60/s)", "40 requests due were never sent", "stalled 12:00:01.210-12:00:01.600 (390 ms: the load generator was 400ms behind"},
		},
		{
			// A catch-up burst: every request sent, 30 of them late.
			name: "late sends",
			results: steadyRun(func(ms int, r *zdv1.Result) *zdv1.Result {
				if ms > 2000 && ms <= 2300 {
					r.Time = at(2310)
					r.Lag = r.Time.Sub(at(ms))
				}
				return r
			}),
			events: loadEvents(), status: zdv1.Error, late: 25,
			want: []string{"25 sent more than 50 ms late (max 300 ms)", "stalled 12:00:02.010-12:00:02.250"},
		},
		{
			// The same late sends, with what the process measured about its
			// own pause: the stall says why (a saturated machine), and a
			// pause far from any stall says nothing.
			name: "late sends explained by the process's own pause",
			results: steadyRun(func(ms int, r *zdv1.Result) *zdv1.Result {
				if ms > 2000 && ms <= 2300 {
					r.Time = at(2310)
					r.Lag = r.Time.Sub(at(ms))
				}
				return r
			}),
			events: loadEvents(
				zdv1.Event{Time: at(2000), Source: zdv1.SourceLoad, Type: zdv1.EventInstrumentPause, Fields: map[string]string{
					"from": at(2000).Format(time.RFC3339Nano), "late_ms": "305.0", "gc_cycles": "0", "gc_stw_ms": "0.0", "run_delay_ms": "290.5", "exec_ms": "4.0", "cause": "cpu"}},
				zdv1.Event{Time: at(500), Source: zdv1.SourceLoad, Type: zdv1.EventInstrumentPause, Fields: map[string]string{
					"from": at(500).Format(time.RFC3339Nano), "late_ms": "400.0", "cause": "gc", "gc_stw_ms": "380"}}),
			status: zdv1.Error, late: 25,
			want: []string{"stalled 12:00:02.010-12:00:02.250 (240 ms; the test process ran 305 ms late: its threads waited 290 ms for a CPU that other processes held)"},
		},
		{
			// Requests missing with no word from the generator (its events
			// lost, or a bug): the sends per second still show it.
			name: "missing without a word",
			results: steadyRun(func(ms int, r *zdv1.Result) *zdv1.Result {
				if ms%100 < 20 { // 20% of every second
					return nil
				}
				return r
			}),
			events: loadEvents(), status: zdv1.Error,
			want: []string{"3 of 3 whole seconds below 97% of 100/s"},
		},
		{
			// Old run files: no lag, no load events; judged from send times.
			name: "no lag, no events", results: steadyRun(keep),
			status: zdv1.Pass, want: []string{"load delivered as scheduled"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := analyze(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: tc.results, events: tc.events})
			rs := reason(sc, "load")
			if rs == nil {
				t.Fatalf("no load reason: %+v", sc.Verdict)
			}
			if rs.Status != tc.status || sc.Verdict.Status != tc.status {
				t.Errorf("load check %s, verdict %s, want %s: %s", rs.Status, sc.Verdict.Status, tc.status, rs.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(rs.Message, w) {
					t.Errorf("message %q lacks %q", rs.Message, w)
				}
			}
			d := sc.Results.Delivery
			if d.Unsent != tc.unsent || d.Late != tc.late {
				t.Errorf("unsent %d late %d, want %d %d", d.Unsent, d.Late, tc.unsent, tc.late)
			}
		})
	}
}

func TestRetriedCountsAsDropped(t *testing.T) {
	rs := steadyRun(func(ms int, r *zdv1.Result) *zdv1.Result {
		if ms == 1500 {
			// The transport re-sent it after the reused connection was
			// reset; the retry got a 200.
			r.Retries, r.RetryError = 1, "reset: read: connection reset by peer"
		}
		return r
	})
	sc := analyze(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: rs, events: loadEvents()})
	if sc.Verdict.Status != zdv1.Fail || sc.Results.Dropped != 1 || sc.Results.Retried != 1 ||
		sc.Results.ErrorClasses[zdv1.ClassRetried] != 1 || sc.Results.Non2xx != 0 {
		t.Fatalf("verdict %s, results %+v", sc.Verdict.Status, sc.Results)
	}
	if len(sc.FailureWindows) != 1 || sc.FailureWindows[0].Classes[zdv1.ClassRetried] != 1 {
		t.Errorf("windows %+v", sc.FailureWindows)
	}
}

// A pause explains a stall only when it is long enough for the lag, and
// never requests left unsent for want of an in-flight slot; nor do pauses
// crowd a failure window's nearest events.
func TestPauseJoinsOnlyWhatItExplains(t *testing.T) {
	pause := func(atMs int, late string) zdv1.Event {
		return zdv1.Event{Time: at(atMs), Source: zdv1.SourceLoad, Type: zdv1.EventInstrumentPause, Fields: map[string]string{
			"from": at(atMs).Format(time.RFC3339Nano), "late_ms": late, "run_delay_ms": "30", "exec_ms": "1", "cause": "cpu"}}
	}
	results := steadyRun(func(ms int, r *zdv1.Result) *zdv1.Result {
		switch {
		case ms > 1200 && ms <= 1600:
			return nil // unsent: the in-flight cap
		case ms > 2000 && ms <= 2300:
			r.Time = at(2310)
			r.Lag = r.Time.Sub(at(ms))
		case ms == 2500:
			r.Status, r.Class = 0, zdv1.ClassRefused
		}
		return r
	})
	var events []zdv1.Event
	for ms := 2400; ms <= 2600; ms += 10 {
		events = append(events, pause(ms, "21.0"))
	}
	events = append(events, pause(1300, "400.0"), pause(2050, "25.0"),
		zdv1.Event{Time: at(1210), Source: zdv1.SourceLoad, Type: zdv1.EventUnsent, Fields: map[string]string{
			"from": at(1210).Format(time.RFC3339Nano), "to": at(1600).Format(time.RFC3339Nano), "requests": "40", "reason": "in-flight cap 2048 reached"}},
		zdv1.Event{Time: at(2450), Source: zdv1.SourceKubernetes, Type: zdv1.EventEndpointRemoved, Object: "endpoint/x"})
	sc := analyze(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: results, events: loadEvents(events...)})
	for _, st := range sc.Results.Delivery.Stalls {
		if st.Pause != nil {
			t.Errorf("stall %s-%s (%s, lag %.0f ms) explained by a %.0f ms pause", st.Start, st.End, st.Reason, st.MaxLagMs, st.Pause.LateMs)
		}
	}
	if len(sc.FailureWindows) != 1 {
		t.Fatalf("windows %+v", sc.FailureWindows)
	}
	found := false
	for _, e := range sc.FailureWindows[0].NearestEvents {
		if e.Type == zdv1.EventInstrumentPause {
			t.Errorf("a pause among the window's nearest events: %+v", e)
		}
		found = found || e.Type == zdv1.EventEndpointRemoved
	}
	if !found {
		t.Errorf("the endpoint removal is not among the window's nearest events: %+v", sc.FailureWindows[0].NearestEvents)
	}
}

// A run with more pauses than are kept keeps the longest: a long one
// late in the run still explains its stall.
func TestManyPausesKeepTheLongest(t *testing.T) {
	d := newDelivery(&zdv1.LoadSettings{Rate: 100})
	for i := range maxPauses + 50 {
		late := "21.0"
		if i == maxPauses+40 {
			late = "300.0"
		}
		d.addEvent(zdv1.Event{Time: at(i), Source: zdv1.SourceLoad, Type: zdv1.EventInstrumentPause, Fields: map[string]string{"late_ms": late, "cause": "cpu"}})
	}
	if len(d.pauses) != maxPauses {
		t.Fatalf("%d pauses kept, want %d", len(d.pauses), maxPauses)
	}
	if !slices.ContainsFunc(d.pauses, func(p zdv1.ProcessPause) bool { return p.LateMs == 300 }) {
		t.Error("the 300 ms pause after the first thousand was not kept")
	}
}

// An instrument-pause event reads back as the report's pause: every cause
// the load generator names, its machine figures where it has them, and
// "unexplained" for a cause it does not know.
func TestParsePause(t *testing.T) {
	ev := func(f map[string]string) zdv1.Event {
		return zdv1.Event{Time: at(0), Source: zdv1.SourceLoad, Type: zdv1.EventInstrumentPause, Fields: f}
	}
	for _, tc := range []struct {
		fields  map[string]string
		cause   string
		machine *zdv1.MachineCPU
	}{
		{map[string]string{"cause": "irq", "late_ms": "60", "machine_tasks_ms": "20", "machine_irq_ms": "110", "machine_idle_ms": "0", "machine_steal_ms": "10"},
			"irq", &zdv1.MachineCPU{TasksMs: 20, IRQMs: 110, StealMs: 10}},
		{map[string]string{"cause": "cpu", "late_ms": "79"}, "cpu", nil},
		{map[string]string{"cause": "something new", "late_ms": "30"}, "unexplained", nil},
	} {
		p := parsePause(ev(tc.fields))
		if p.Cause != tc.cause || (p.Machine == nil) != (tc.machine == nil) || (p.Machine != nil && *p.Machine != *tc.machine) {
			t.Errorf("%v: cause %q machine %+v, want %q %+v", tc.fields, p.Cause, p.Machine, tc.cause, tc.machine)
		}
	}
}

// TestDeliveryReasonFigures: a load ERROR carries the figure that broke
// with its limit, which a report's headline shows ("load 60 (limit 50)").
func TestDeliveryReasonFigures(t *testing.T) {
	base := zdv1.Delivery{RequestedRate: 200, Seconds: 30, MinSecondRate: 200, LagBoundMs: 50, MaxLagMs: 3}
	for _, tc := range []struct {
		name           string
		mutate         func(*zdv1.Delivery)
		observed, want float64
	}{
		{"a short second: the rate", func(d *zdv1.Delivery) {
			d.MinSecondRate, d.ShortSecondsTotal = 150, 1
			d.ShortSeconds = []zdv1.DeliverySecond{{Sent: 150}}
			d.Late, d.MaxLagMs = 2, 80
		}, 150, 194},
		{"late only: the largest lag", func(d *zdv1.Delivery) { d.Late, d.MaxLagMs = 3, 60 }, 60, 50},
		{"unsent only: the count", func(d *zdv1.Delivery) { d.Unsent = 4 }, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			tc.mutate(&d)
			r := deliveryReason(&d)
			if r.Status != zdv1.Error || r.Observed == nil || r.Limit == nil || *r.Observed != tc.observed || *r.Limit != tc.want {
				t.Errorf("got %s observed %v limit %v, want ERROR %v (limit %v)", r.Status, deref(r.Observed), deref(r.Limit), tc.observed, tc.want)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
