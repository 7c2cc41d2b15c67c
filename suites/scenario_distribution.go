package suites

import (
	"context"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/incident"
)

// distribution measures per-pod shares over two pools and names pods that get
// nothing (the nodepool-backend incident).
func distribution() Scenario {
	return Scenario{
		Name:        "distribution",
		Description: "Per-pod traffic shares with one pod per node over two pools; pods that get nothing are flagged.",
		Seeds:       []string{incident.NodepoolBackend},
		Cases: []Case{
			{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: zdv1.RoleAssertion},
			{Policy: localPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: zdv1.RoleDocumentation},
		},
		Body: runDistribution,
	}
}

func runDistribution(ctx context.Context, s *Suite, sc Scenario, c Case) (zdv1.Scenario, error) {
	sp := s.spec(sc, c, fixtures.WithReplicas(3), fixtures.WithSpread(true), fixtures.WithPools("pool-a", "pool-b"))
	if c.Role == zdv1.RoleAssertion {
		sp.Criteria.RequireAllPodsServed = true
		sp.Criteria.MinPodShare = zdv1.Float64(0.15)
	}
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if _, err := run.ExpectPods(ctx); err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.Timing.ObserveShares); err != nil {
		return zdv1.Scenario{}, err
	}
	return run.Finish(ctx)
}
