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
		Cases: []Case{
			{Policy: localPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion, Smoke: true},
			{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion},
		},
		Body: runSourceIP,
	}
}

func runSourceIP(ctx context.Context, s *Suite, sc Scenario, c Case) (zdv1.Scenario, error) {
	sp := s.spec(sc, c, fixtures.WithReplicas(2))
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	host, err := scenario.SourceAddress(run.Address)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	// Local must keep the client's address; Cluster replaces it with a
	// node's (incident nodepool-backend: "better load balancing, but we lose the proper
	// source IP").
	err = run.SetCriteria(fmt.Sprintf("the load generator reaches %s from %s", run.Address, host), func(cr *zdv1.Criteria) {
		if c.Policy == localPolicy {
			cr.ExpectedClientIP = host
		} else {
			cr.ForbiddenClientIP = host
		}
	})
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.Timing.Observe); err != nil {
		return zdv1.Scenario{}, err
	}
	return run.Finish(ctx)
}
