package suites

import (
	"context"
	"fmt"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/incident"
	"zerodrop/harness/scenario"
)

// sourceIP checks the client address each pod sees: Local must keep it,
// Cluster hides it (the nodepool-backend and source-ip-dilemma incidents).
func sourceIP() Scenario {
	return Scenario{
		Name:        "source-ip",
		Description: "Does the pod see the load generator's address? Local must preserve it; Cluster SNATs it away.",
		Seeds:       []string{incident.NodepoolBackend, incident.SourceIPDilemma},
		Triggers:    []incident.Trigger{incident.Placement},
		Cases: []Case{
			{Policy: localPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion, Smoke: true},
			{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion},
		},
		Body: runSourceIP,
	}
}

func runSourceIP(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec {
		sp := s.spec(sc, c, fixtures.WithReplicas(2))
		// Nothing is disrupted: a request that fails is the ground moving.
		sp.Criteria.Undisturbed = true
		return sp
	})
	ws.Each(ctx, func(ctx context.Context, i int, r *scenario.Run) error {
		host, err := scenario.SourceAddress(r.Address)
		if err != nil {
			return err
		}
		// Local must keep the client's address; Cluster replaces it with a
		// node's (incident nodepool-backend: "better load balancing, but we
		// lose the proper source IP").
		return r.SetCriteria(fmt.Sprintf("the load generator reaches %s from %s", r.Address, host), func(cr *zdv1.Criteria) {
			if cells[i].Policy == localPolicy {
				cr.ExpectedClientIP = host
			} else {
				cr.ForbiddenClientIP = host
			}
		})
	})
	return ws.Finish(ctx, settleFor(s.Timing.Observe))
}
