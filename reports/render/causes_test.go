package render

import (
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestWindowCauses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := func(offset time.Duration, typ string) zdv1.WindowEvent {
		return zdv1.WindowEvent{Event: zdv1.Event{Time: t0.Add(offset), Source: zdv1.SourceUser, Type: typ},
			OffsetMs: msOf(offset)}
	}
	window := func(d time.Duration, events ...zdv1.WindowEvent) zdv1.FailureWindow {
		return zdv1.FailureWindow{Start: t0, End: t0.Add(d), DurationMs: msOf(d), NearestEvents: events}
	}
	tests := []struct {
		name    string
		w       zdv1.FailureWindow
		margin  time.Duration
		want    []string // type@place
		more    int
		nearest string
	}{
		{
			// What the issue saw: the kill 15 ms and the SIGSTOP 27 ms
			// after the window's start, the load's start 3 s before it.
			// The old column named the load's start.
			name:   "inside beats a distant event before",
			w:      window(250*time.Millisecond, ev(-3*time.Second, zdv1.EventLoadStart), ev(15*time.Millisecond, "kill"), ev(27*time.Millisecond, "sigstop")),
			margin: 50 * time.Millisecond,
			want:   []string{"kill@inside", "sigstop@inside"},
		},
		{
			// A window of one failed request: the kill came while it was
			// in flight, 15 ms after it was sent.
			name:   "just after a one-request window",
			w:      window(0, ev(-3*time.Second, zdv1.EventLoadStart), ev(15*time.Millisecond, "kill")),
			margin: 50 * time.Millisecond,
			want:   []string{"kill@after"},
		},
		{
			name: "ranked by distance from the start",
			w: window(100*time.Millisecond, ev(-40*time.Millisecond, zdv1.EventCordon), ev(-5*time.Millisecond, zdv1.EventPodDeleted),
				ev(60*time.Millisecond, zdv1.EventEndpointRemoved), ev(120*time.Millisecond, zdv1.EventPodReady)),
			margin: 50 * time.Millisecond,
			want:   []string{"pod-deleted@before", "cordon@before", "endpoint-removed@inside", "pod-ready@after"},
		},
		{
			// The kill just before the window failed it; the restart at its
			// end ended it.
			name:   "a restart at the end ranks after the kill just before",
			w:      window(315*time.Millisecond, ev(-time.Millisecond, "kill-9"), ev(306*time.Millisecond, "restart")),
			margin: 4 * time.Millisecond,
			want:   []string{"kill-9@before", "restart@inside"},
		},
		{
			name:   "inside first at the same distance",
			w:      window(100*time.Millisecond, ev(-10*time.Millisecond, zdv1.EventCordon), ev(10*time.Millisecond, zdv1.EventPodDeleted)),
			margin: 50 * time.Millisecond,
			want:   []string{"pod-deleted@inside", "cordon@before"},
		},
		{
			name:    "nothing close: nearest for context only",
			w:       window(100*time.Millisecond, ev(-2*time.Second, zdv1.EventLoadStart), ev(time.Second, zdv1.EventNote)),
			margin:  50 * time.Millisecond,
			nearest: zdv1.EventNote,
		},
		{
			name:   "the margin is inclusive",
			w:      window(0, ev(-50*time.Millisecond, zdv1.EventCordon), ev(51*time.Millisecond, zdv1.EventUncordon)),
			margin: 50 * time.Millisecond,
			want:   []string{"cordon@before"},
		},
		{
			name: "more than maxCauses are cut",
			w: window(time.Second, ev(10*time.Millisecond, "a"), ev(20*time.Millisecond, "b"), ev(30*time.Millisecond, "c"),
				ev(40*time.Millisecond, "d"), ev(50*time.Millisecond, "e"), ev(60*time.Millisecond, "f"), ev(70*time.Millisecond, "g")),
			margin: time.Millisecond,
			want:   []string{"a@inside", "b@inside", "c@inside", "d@inside", "e@inside"},
			more:   2,
		},
		{name: "no events at all", w: window(time.Second), margin: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			near, more, nearest := windowCauses(tc.w, tc.margin)
			var got []string
			for _, c := range near {
				got = append(got, c.Type+"@"+c.Place)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") || more != tc.more {
				t.Errorf("causes %v (+%d), want %v (+%d)", got, more, tc.want, tc.more)
			}
			gotNearest := ""
			if nearest != nil {
				gotNearest = nearest.Type
			}
			if gotNearest != tc.nearest {
				t.Errorf("nearest %q, want %q", gotNearest, tc.nearest)
			}
		})
	}
}

func TestCausesText(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := zdv1.FailureWindow{Start: t0, End: t0.Add(100 * time.Millisecond), NearestEvents: []zdv1.WindowEvent{
		{Event: zdv1.Event{Time: t0.Add(-3 * time.Second), Type: zdv1.EventLoadStart, Message: "load started"}, OffsetMs: -3000},
		{Event: zdv1.Event{Time: t0.Add(15 * time.Millisecond), Type: "kill", Object: "pod/echo"}, OffsetMs: 15},
		{Event: zdv1.Event{Time: t0.Add(-2 * time.Millisecond), Type: zdv1.EventAction, Message: "sigstop"}, OffsetMs: -2},
	}}
	tests := []struct {
		margin time.Duration
		want   string
	}{
		{50 * time.Millisecond, "2.0 ms before action: sigstop; at +15.0 ms kill pod/echo"},
		{time.Millisecond, "at +15.0 ms kill pod/echo"},
	}
	for _, tc := range tests {
		if got := causesText(w, tc.margin, 100); got != tc.want {
			t.Errorf("margin %v: %q, want %q", tc.margin, got, tc.want)
		}
	}
	w.NearestEvents = w.NearestEvents[:1]
	if got, want := causesText(w, 50*time.Millisecond, 100), "no event within ±50.0 ms; nearest: load-start: load started 3.00 s before"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestEdgeMargin(t *testing.T) {
	for _, tc := range []struct {
		maxMs float64
		want  time.Duration
	}{{51.1, 51100 * time.Microsecond}, {0.2, minEdgeMargin}, {0, minEdgeMargin}} {
		sc := zdv1.Scenario{Results: zdv1.Results{Latency: zdv1.Latency{MaxMs: tc.maxMs}}}
		if got := edgeMargin(&sc); got != tc.want {
			t.Errorf("max latency %v ms: margin %v, want %v", tc.maxMs, got, tc.want)
		}
	}
}
