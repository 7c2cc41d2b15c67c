package suites

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// control is the ground every other scenario stands on: the same load
// through every LB model, both traffic policies, kept-alive and a
// connection per request, with nothing disrupted. Each of its cells is the
// control of its column (LB model x policy x keep-alive): its outcome goes
// into the run file of every later cell of that column (EventControl), and
// a control that dropped anything makes them ERROR. It runs first, so the
// cells after it are judged against it.
//
// Why it is needed: through the cloud LB, a connection per request at
// 200/s once met connect timeouts seconds before any disruption began, and
// the verdict charged them to the workload as a hazard reproduced or a fix
// that did not hold. A conformance suite shows first that its ground is
// still.
func control() Scenario {
	var cases []Case
	for _, p := range []corev1.ServiceExternalTrafficPolicy{clusterPolicy, localPolicy} {
		for _, ka := range []bool{true, false} {
			cases = append(cases, Case{Policy: p, Hardening: fixtures.Hardened, KeepAlive: ka, Role: zdv1.RoleAssertion})
		}
	}
	return Scenario{
		Name: controlName,
		Description: "Load through every LB model, both traffic policies, kept-alive and a connection per request, with nothing " +
			"disrupted: every request must be served, or the ground moves under that column's other cells.",
		Control: true,
		Cases:   cases,
		Body:    runControl,
		Cost:    observeCost(func(tm Timing) time.Duration { return tm.Control }),
	}
}

// controlName is the control scenario's name: its cells' names start with
// it (Scenario.CellName).
const controlName = "control"

func runControl(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	// A control is not judged against itself.
	ws := s.begin(ctx, cells, func(c Cell) scenario.Spec {
		sp := s.spec(sc, c)
		sp.Criteria.Undisturbed = true
		// A control that measured too little to be still ground says
		// nothing: it needs its whole span's requests.
		sp.Criteria.MinRequests = int64(float64(sp.Rate) * s.Timing.Control.Seconds() * 0.9)
		return sp
	}, false)
	return ws.Finish(ctx, settleFor(s.Timing.Control))
}
