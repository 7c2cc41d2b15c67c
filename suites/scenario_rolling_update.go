package suites

import (
	"context"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/incident"
)

// rollingUpdate is kubectl rollout restart under load: the
// rolling-update-local incident (docs/incidents.md), with Cluster and Local,
// naive and hardened.
func rollingUpdate() Scenario {
	rolling := matrix(clusterPolicy, localPolicy)
	for i := range rolling {
		if rolling[i].Policy == clusterPolicy && rolling[i].Profile == fixtures.Hardened {
			rolling[i].Smoke = true
		}
	}
	return Scenario{
		Name: "rolling-update",
		Description: "kubectl rollout restart of the workload under load. Naive: no preStop, the app exits at once, " +
			"probe defaults. Hardened: preStop covering the LB's lag, graceful drain, surge rollout, minReadySeconds.",
		Seeds: []string{incident.RollingUpdateLocal, incident.SourceIPDilemma},
		Cases: rolling,
		Body:  runRollingUpdate,
	}
}

func runRollingUpdate(ctx context.Context, s *Suite, sc Scenario, c Case) (zdv1.Scenario, error) {
	sp := s.spec(sc, c, fixtures.WithReplicas(3))
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.Timing.Baseline); err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Kube.RolloutRestart(ctx, run.Config.Namespace, run.Config.Name, s.Settings.ReadyTimeout); err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return zdv1.Scenario{}, err
	}
	return run.Finish(ctx)
}
