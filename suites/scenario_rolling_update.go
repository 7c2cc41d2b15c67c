package suites

import (
	"context"

	"zerodrop/fixtures"
	"zerodrop/harness/incident"
	"zerodrop/harness/scenario"
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
		Seeds:    []string{incident.RollingUpdateLocal, incident.SourceIPDilemma},
		Triggers: []incident.Trigger{incident.Rollout, incident.PodTermination},
		Own:      true,
		Cases:    rolling,
		Hazard: "a pod that exits at once on SIGTERM refuses the connections kube-proxy and the LB still send it " +
			"until its endpoint's removal reaches them; with Local, a node whose last endpoint went keeps getting " +
			"the LB's traffic until its health check fails",
		Body: runRollingUpdate,
	}
}

func runRollingUpdate(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec { return s.spec(sc, c, fixtures.WithReplicas(3)) })
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	// The restart starts in every witness at the same moment.
	ws.Each(ctx, func(ctx context.Context, _ int, r *scenario.Run) error {
		return r.Kube.RestartWorkload(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Workload, s.rolloutTimeout(r))
	})
	return ws.Finish(ctx, s.settleEach(cells))
}
