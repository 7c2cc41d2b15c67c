package verdict

import (
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Every window explained: a failure window after the disruption began
// needs an event of the disruption inside it, within ExplainWithinMs
// before it, or stamped up to a watch's delivery after it; the load
// generator's own events never explain one.
func TestExplainedCheck(t *testing.T) {
	disrupt := zdv1.Event{Time: at(1000), Source: zdv1.SourceHarness, Type: zdv1.EventDisruption, Message: "rollout of deployment/echo"}
	ev := func(ms int, source, typ string) zdv1.Event {
		return zdv1.Event{Time: at(ms), Source: source, Type: typ, Object: "pod/echo-1"}
	}
	failAt := func(from, to int) func(int, *zdv1.Result) *zdv1.Result {
		return failBetween(from, to, zdv1.ClassRefused)
	}
	node := func(ms int, typ, name string) zdv1.Event {
		return zdv1.Event{Time: at(ms), Source: zdv1.SourceHarness, Type: typ, Object: "node/" + name}
	}
	within := func(ms float64) zdv1.Criteria {
		return zdv1.Criteria{MaxDropped: zdv1.Int64(0), ExplainWithinMs: zdv1.Float64(ms)}
	}
	tests := []struct {
		name        string
		crit        zdv1.Criteria
		failFrom    int
		events      []zdv1.Event
		check       zdv1.Status // "" when absent
		unexplained bool
		status      zdv1.Status
	}{
		{name: "a window just after a pod began terminating", crit: within(500), failFrom: 1800,
			events: []zdv1.Event{disrupt, ev(1500, zdv1.SourceKubernetes, zdv1.EventPodTerminating)}, check: zdv1.Pass, status: zdv1.Fail},
		{name: "an event inside the window explains it", crit: within(100), failFrom: 1800,
			events: []zdv1.Event{disrupt, ev(1850, zdv1.SourceLB, zdv1.EventLBBackendRemoved)}, check: zdv1.Pass, status: zdv1.Fail},
		{name: "a Kubernetes event stamped on delivery, just after the window", crit: within(100), failFrom: 1800,
			events: []zdv1.Event{disrupt, ev(2500, zdv1.SourceKubernetes, zdv1.EventEndpointRemoved)}, check: zdv1.Pass, status: zdv1.Fail},
		{name: "nothing of the disruption near the window", crit: within(500), failFrom: 2500,
			events: []zdv1.Event{disrupt, ev(1100, zdv1.SourceKubernetes, zdv1.EventPodTerminating)}, check: zdv1.Error, unexplained: true, status: zdv1.Error},
		{name: "the load generator's own events explain nothing", crit: within(500), failFrom: 2500,
			events: []zdv1.Event{disrupt, ev(2450, zdv1.SourceLoad, zdv1.EventUnsent), ev(2460, zdv1.SourceHarness, zdv1.EventControl)},
			check:  zdv1.Error, unexplained: true, status: zdv1.Error},
		{name: "a window long into a machine's shutdown, before it is off", crit: within(500), failFrom: 2500,
			events: []zdv1.Event{disrupt, node(1100, zdv1.EventNodeShutdown, "w1"), node(4000, zdv1.EventNodeOff, "w1")}, check: zdv1.Pass, status: zdv1.Fail},
		{name: "another machine off does not end a shutdown", crit: within(500), failFrom: 2500,
			events: []zdv1.Event{disrupt, node(1100, zdv1.EventNodeShutdown, "w1"), node(1200, zdv1.EventNodeOff, "w2"), node(4000, zdv1.EventNodeOff, "w1")},
			check:  zdv1.Pass, status: zdv1.Fail},
		{name: "a machine off long before the window", crit: within(500), failFrom: 2500,
			events: []zdv1.Event{disrupt, node(1100, zdv1.EventNodeShutdown, "w1"), node(1300, zdv1.EventNodeOff, "w1")},
			check:  zdv1.Error, unexplained: true, status: zdv1.Error},
		{name: "a shutdown never seen to end lasts no longer than its event", crit: within(500), failFrom: 2500,
			events: []zdv1.Event{disrupt, node(1100, zdv1.EventNodeShutdown, "w1")}, check: zdv1.Error, unexplained: true, status: zdv1.Error},
		{name: "without the criterion the window is the workload's", crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, failFrom: 2500,
			events: []zdv1.Event{disrupt}, status: zdv1.Fail},
		{name: "before the disruption it is the ground check's, not this one's", crit: within(100), failFrom: 500,
			events: []zdv1.Event{disrupt}, check: zdv1.Pass, status: zdv1.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := analyze(t, runSpec{crit: tt.crit, results: steadyRun(failAt(tt.failFrom, tt.failFrom+50)), events: loadEvents(tt.events...)})
			rs := reason(sc, zdv1.CheckExplained)
			switch {
			case tt.check == "" && rs != nil:
				t.Fatalf("explained check present: %+v", *rs)
			case tt.check != "" && rs == nil:
				t.Fatalf("no explained check; reasons %+v", sc.Verdict.Reasons)
			case rs != nil && rs.Status != tt.check:
				t.Fatalf("explained check %s, want %s: %s", rs.Status, tt.check, rs.Message)
			}
			if len(sc.FailureWindows) != 1 || sc.FailureWindows[0].Unexplained != tt.unexplained {
				t.Fatalf("windows %+v, want one with unexplained=%v", sc.FailureWindows, tt.unexplained)
			}
			if sc.Verdict.Status != tt.status {
				t.Errorf("verdict %s, want %s: %+v", sc.Verdict.Status, tt.status, sc.Verdict.Reasons)
			}
			if tt.unexplained && (!strings.Contains(rs.Message, "unexplained: 1 failure window") || len(rs.Windows) != 1) {
				t.Errorf("message %q / windows %v do not name the window", rs.Message, rs.Windows)
			}
		})
	}
}

// A cell documenting a platform limit drops only where the limit's
// mechanism acts: a window that no event of the limit's types opens
// (inside it, within ExplainWithinMs before, or stamped on delivery just
// after) is not the limit's, and the cell is ERROR, even though another
// event of the disruption explains the window.
func TestLimitOpensCheck(t *testing.T) {
	disrupt := zdv1.Event{Time: at(1000), Source: zdv1.SourceHarness, Type: zdv1.EventDisruption, Message: "drain of node w1"}
	ev := func(ms int, source, typ string) zdv1.Event {
		return zdv1.Event{Time: at(ms), Source: source, Type: typ, Object: "node/w1"}
	}
	failAt := func(from int) func(int, *zdv1.Result) *zdv1.Result {
		return failBetween(from, from+50, zdv1.ClassReset)
	}
	limit := func(opens ...string) zdv1.Criteria {
		return zdv1.Criteria{ExplainWithinMs: zdv1.Float64(500), LimitOpens: opens}
	}
	tests := []struct {
		name     string
		crit     zdv1.Criteria
		failFrom int
		events   []zdv1.Event
		check    zdv1.Status // "" when absent
		outside  bool
	}{
		{name: "the LB marked the node unhealthy just before", crit: limit(zdv1.EventLBNodeUnhealthy), failFrom: 1800,
			events: []zdv1.Event{disrupt, ev(1700, zdv1.SourceLB, zdv1.EventLBNodeUnhealthy)}, check: zdv1.Pass},
		{name: "one of several types, stamped on delivery after the window", crit: limit(zdv1.EventEndpointStoppedServing, zdv1.EventEndpointAdded),
			failFrom: 1800, events: []zdv1.Event{disrupt, ev(2400, zdv1.SourceKubernetes, zdv1.EventEndpointAdded)}, check: zdv1.Pass},
		{name: "explained by the disruption, but not by the limit's mechanism", crit: limit(zdv1.EventLBNodeUnhealthy), failFrom: 1800,
			events: []zdv1.Event{disrupt, ev(1700, zdv1.SourceKubernetes, zdv1.EventPodTerminating)}, check: zdv1.Error, outside: true},
		{name: "the limit's event long before the window", crit: limit(zdv1.EventLBNodeUnhealthy), failFrom: 2500,
			events: []zdv1.Event{disrupt, ev(1100, zdv1.SourceLB, zdv1.EventLBNodeUnhealthy), ev(2450, zdv1.SourceHarness, zdv1.EventCordon)},
			check:  zdv1.Error, outside: true},
		{name: "a load event of the same name opens nothing", crit: limit(zdv1.EventLBNodeUnhealthy), failFrom: 1800,
			events: []zdv1.Event{disrupt, ev(1790, zdv1.SourceLoad, zdv1.EventLBNodeUnhealthy), ev(1795, zdv1.SourceHarness, zdv1.EventCordon)},
			check:  zdv1.Error, outside: true},
		{name: "a machine's shutdown opens windows until it is off", crit: limit(zdv1.EventNodeShutdown), failFrom: 2500,
			events: []zdv1.Event{disrupt, ev(1100, zdv1.SourceHarness, zdv1.EventNodeShutdown), ev(2450, zdv1.SourceHarness, zdv1.EventCordon),
				ev(3000, zdv1.SourceHarness, zdv1.EventNodeOff)}, check: zdv1.Pass},
		{name: "but not after it is off", crit: limit(zdv1.EventNodeShutdown), failFrom: 2500,
			events: []zdv1.Event{disrupt, ev(1100, zdv1.SourceHarness, zdv1.EventNodeShutdown), ev(1200, zdv1.SourceHarness, zdv1.EventNodeOff),
				ev(2450, zdv1.SourceHarness, zdv1.EventCordon)}, check: zdv1.Error, outside: true},
		{name: "no limit documented: no check", crit: zdv1.Criteria{ExplainWithinMs: zdv1.Float64(500)}, failFrom: 1800,
			events: []zdv1.Event{disrupt, ev(1700, zdv1.SourceKubernetes, zdv1.EventPodTerminating)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := analyze(t, runSpec{crit: tt.crit, results: steadyRun(failAt(tt.failFrom)), events: loadEvents(tt.events...)})
			rs := reason(sc, zdv1.CheckLimit)
			switch {
			case tt.check == "" && rs != nil:
				t.Fatalf("limit check present: %+v", *rs)
			case tt.check != "" && rs == nil:
				t.Fatalf("no limit check; reasons %+v", sc.Verdict.Reasons)
			case rs != nil && rs.Status != tt.check:
				t.Fatalf("limit check %s, want %s: %s", rs.Status, tt.check, rs.Message)
			}
			if len(sc.FailureWindows) != 1 || sc.FailureWindows[0].OutsideLimit != tt.outside {
				t.Fatalf("windows %+v, want one with outsideLimit=%v", sc.FailureWindows, tt.outside)
			}
			if tt.outside && (sc.Verdict.Status != zdv1.Error || !strings.Contains(rs.Message, "outside the limit: 1 failure window") || len(rs.Windows) != 1) {
				t.Errorf("verdict %s, message %q, windows %v: want ERROR naming the window", sc.Verdict.Status, rs.Message, rs.Windows)
			}
		})
	}
}
