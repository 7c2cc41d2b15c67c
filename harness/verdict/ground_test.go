package verdict

import (
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// The still-ground check: what failed while nothing was disrupted is the
// ground moving (ERROR), whatever the role; what failed after the
// disruption began is the workload's (the dropped check decides).
func TestGroundCheck(t *testing.T) {
	disrupt := func(ms int) zdv1.Event {
		return zdv1.Event{Time: at(ms), Source: zdv1.SourceHarness, Type: zdv1.EventDisruption, Message: "drain node n1"}
	}
	failAt := func(from, to int) func(int, *zdv1.Result) *zdv1.Result {
		return failBetween(from, to, zdv1.ClassTimeout)
	}
	crit := zdv1.Criteria{MaxDropped: zdv1.Int64(0)}
	undisturbed := zdv1.Criteria{MaxDropped: zdv1.Int64(0), Undisturbed: true}
	tests := []struct {
		name    string
		role    zdv1.Role
		crit    zdv1.Criteria
		edit    func(int, *zdv1.Result) *zdv1.Result
		events  []zdv1.Event
		ground  zdv1.Status // "" when the check must be absent
		moved   int64
		status  zdv1.Status
		outcome string
		inMsg   string
	}{
		{name: "clean before and after the disruption", crit: crit, edit: keep, events: []zdv1.Event{disrupt(1000)},
			ground: zdv1.Pass, status: zdv1.Pass, outcome: "PASS", inMsg: "before the disruption began at 12:00:01.000"},
		{name: "drops after the disruption are the workload's", crit: crit, edit: failAt(1500, 1600), events: []zdv1.Event{disrupt(1000)},
			ground: zdv1.Pass, status: zdv1.Fail, outcome: "FAIL"},
		{name: "drops before the disruption: the ground moved, never FAIL", crit: crit, edit: failAt(500, 550), events: []zdv1.Event{disrupt(1000)},
			ground: zdv1.Error, moved: 5, status: zdv1.Error, outcome: "ERROR", inMsg: "5 of 300 requests failed before the disruption began at 12:00:01.000"},
		{name: "a window across the disruption counts only what was sent before it", crit: crit, edit: failAt(950, 1050), events: []zdv1.Event{disrupt(1000)},
			ground: zdv1.Error, moved: 5, status: zdv1.Error, outcome: "ERROR"},
		{name: "a documentation run whose ground moved reproduced nothing", role: zdv1.RoleDocumentation, crit: crit, edit: failAt(500, 520),
			events: []zdv1.Event{disrupt(1000)}, ground: zdv1.Error, moved: 2, status: zdv1.Error, outcome: "ERROR"},
		{name: "the first disruption event counts", crit: crit, edit: failAt(1500, 1510),
			events: []zdv1.Event{disrupt(2000), disrupt(1000)}, ground: zdv1.Pass, status: zdv1.Fail, outcome: "FAIL"},
		{name: "a disruption told by someone else is not the harness's", crit: crit, edit: failAt(500, 510),
			events: []zdv1.Event{{Time: at(1000), Source: zdv1.SourceUser, Type: zdv1.EventDisruption}}, status: zdv1.Fail, outcome: "FAIL"},
		{name: "an undisturbed run that held", crit: undisturbed, edit: keep, ground: zdv1.Pass, status: zdv1.Pass, outcome: "PASS",
			inMsg: "while nothing was disrupted"},
		{name: "an undisturbed run that dropped", crit: undisturbed, edit: failAt(2000, 2030), ground: zdv1.Error, moved: 3,
			status: zdv1.Error, outcome: "ERROR", inMsg: "3 of 300 requests failed while nothing was disrupted"},
		{name: "a run that marks no disruption cannot be checked", crit: crit, edit: failAt(500, 510), status: zdv1.Fail, outcome: "FAIL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := analyze(t, runSpec{crit: tt.crit, results: steadyRun(tt.edit), events: loadEvents(tt.events...)})
			if tt.role != "" {
				// The role changes the outcome's words, not the verdict.
				sc.Role = tt.role
			}
			rs := reason(sc, zdv1.CheckGround)
			switch {
			case tt.ground == "" && rs != nil:
				t.Fatalf("ground check present: %+v", *rs)
			case tt.ground != "" && rs == nil:
				t.Fatalf("no ground check; reasons: %+v", sc.Verdict.Reasons)
			case rs != nil && rs.Status != tt.ground:
				t.Fatalf("ground check %s, want %s: %s", rs.Status, tt.ground, rs.Message)
			case rs != nil && tt.inMsg != "" && !strings.Contains(rs.Message, tt.inMsg):
				t.Fatalf("ground message %q lacks %q", rs.Message, tt.inMsg)
			}
			if sc.Results.GroundMoved != tt.moved {
				t.Errorf("groundMoved %d, want %d", sc.Results.GroundMoved, tt.moved)
			}
			if sc.Verdict.Status != tt.status {
				t.Errorf("verdict %s, want %s: %+v", sc.Verdict.Status, tt.status, sc.Verdict.Reasons)
			}
			if got := sc.Outcome(); got != tt.outcome {
				t.Errorf("outcome %q, want %q", got, tt.outcome)
			}
			var inWindows int64
			for _, w := range sc.FailureWindows {
				inWindows += w.GroundMoved
			}
			if inWindows != sc.Results.GroundMoved {
				t.Errorf("windows hold %d moved, results %d", inWindows, sc.Results.GroundMoved)
			}
			if sc.LoadSpoiled() {
				t.Errorf("a run the ground moved under is not the load generator's to measure again")
			}
		})
	}
}

// The control check: the run file carries its column's control outcome,
// and a control that moved makes the cell ERROR whatever it measured.
func TestControlCheck(t *testing.T) {
	f := zdv1.ControlFields
	control := func(total, dropped, status string) zdv1.Event {
		return zdv1.Event{Time: at(5), Source: zdv1.SourceHarness, Type: zdv1.EventControl, Fields: map[string]string{
			f.Name: "control/gcp-nlb/cluster/hardened/no-keepalive", f.RunFile: "run.jsonl", f.Total: total, f.Dropped: dropped, f.Status: status}}
	}
	crit := zdv1.Criteria{MaxDropped: zdv1.Int64(0)}
	tests := []struct {
		name    string
		events  []zdv1.Event
		edit    func(int, *zdv1.Result) *zdv1.Result
		check   zdv1.Status // "" when absent
		verdict zdv1.Status
		inMsg   string
	}{
		{name: "no control recorded", edit: keep, verdict: zdv1.Pass},
		{name: "a control that held", events: []zdv1.Event{control("12000", "0", "PASS")}, edit: keep,
			check: zdv1.Pass, verdict: zdv1.Pass, inMsg: "0 of 12000 dropped"},
		{name: "a control that dropped makes a clean cell ERROR", events: []zdv1.Event{control("12000", "3", "ERROR")}, edit: keep,
			check: zdv1.Error, verdict: zdv1.Error, inMsg: "dropped 3 of 12000 requests with nothing disrupted"},
		{name: "a control that dropped makes a failing cell ERROR, not FAIL", events: []zdv1.Event{control("12000", "1", "ERROR")},
			edit: func(ms int, r *zdv1.Result) *zdv1.Result {
				if ms == 2000 {
					f := fail(ms, zdv1.ClassRefused)
					return &f
				}
				return r
			}, check: zdv1.Error, verdict: zdv1.Error},
		{name: "a control that broke without dropping", events: []zdv1.Event{control("40", "0", "ERROR")}, edit: keep,
			check: zdv1.Error, verdict: zdv1.Error},
		{name: "an unreadable control event is not a pass", events: []zdv1.Event{control("many", "0", "PASS")}, edit: keep,
			check: zdv1.Error, verdict: zdv1.Error, inMsg: "unreadable"},
		{name: "a control told by someone else is not read",
			events: []zdv1.Event{{Time: at(5), Source: zdv1.SourceUser, Type: zdv1.EventControl, Fields: map[string]string{f.Dropped: "9"}}},
			edit:   keep, verdict: zdv1.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := analyze(t, runSpec{crit: crit, results: steadyRun(tt.edit), events: loadEvents(tt.events...)})
			rs := reason(sc, zdv1.CheckControl)
			switch {
			case tt.check == "" && rs != nil:
				t.Fatalf("control check present: %+v", *rs)
			case tt.check != "" && rs == nil:
				t.Fatalf("no control check: %+v", sc.Verdict.Reasons)
			case rs != nil && rs.Status != tt.check:
				t.Fatalf("control check %s, want %s: %s", rs.Status, tt.check, rs.Message)
			case rs != nil && !strings.Contains(rs.Message, tt.inMsg):
				t.Fatalf("control message %q lacks %q", rs.Message, tt.inMsg)
			}
			if sc.Verdict.Status != tt.verdict {
				t.Errorf("verdict %s, want %s", sc.Verdict.Status, tt.verdict)
			}
			// What every output prints first is why the cell is ERROR.
			if tt.check == zdv1.Error && !strings.HasPrefix(sc.OutcomeText(), "ERROR: the ground moves under this column") &&
				!strings.Contains(sc.OutcomeText(), "unreadable") {
				t.Errorf("outcome text %q does not lead with the control", sc.OutcomeText())
			}
		})
	}
}

// A stream or a WebSocket session is judged by its end for whether the
// ground moved: one sent before the disruption and cut after it began was
// served until the disruption came. A plain request by its send time.
func TestFailedAt(t *testing.T) {
	sent := time.Date(2026, 12, 6, 6, 27, 17, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    zdv1.Result
		want time.Time
	}{
		{"request", zdv1.Result{Time: sent, Latency: 2 * time.Second}, sent},
		{"stream", zdv1.Result{Time: sent, Latency: 1500 * time.Millisecond, WantMessages: 10, Messages: 7}, sent.Add(1500 * time.Millisecond)},
	} {
		if got := failedAt(&tc.r); !got.Equal(tc.want) {
			t.Errorf("%s: failedAt = %s, want %s", tc.name, got, tc.want)
		}
	}
}
