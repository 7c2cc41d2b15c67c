package suites

import (
	"context"

	"zerodrop/fixtures"
	"zerodrop/harness/incident"
	"zerodrop/reports"
)

// distribution measures per-pod shares over two pools and names pods that get
// nothing (the nodepool-backend incident).
func distribution() Scenario {
	return Scenario{
		Name:        "distribution",
		Description: "Per-pod traffic shares with one pod per node over two pools; pods that get nothing are flagged.",
		Seeds:       []string{incident.NodepoolBackend},
		Cases: []Case{
			{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: reports.RoleAssertion},
			{Policy: localPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: reports.RoleDocumentation},
		},
		Body: runDistribution,
	}
}

func runDistribution(ctx context.Context, s *Suite, sc Scenario, c Case) (reports.Scenario, error) {
	sp := s.spec(sc, c, fixtures.WithReplicas(3), fixtures.WithSpread(true), fixtures.WithPools("pool-a", "pool-b"))
	if c.Role == reports.RoleAssertion {
		sp.Criteria.RequireAllPodsServed = true
		sp.Criteria.MinPodShare = reports.Float64(0.15)
	}
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	if _, err := run.ExpectPods(ctx); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, s.Timing.ObserveShares); err != nil {
		return reports.Scenario{}, err
	}
	return run.Finish(ctx)
}
