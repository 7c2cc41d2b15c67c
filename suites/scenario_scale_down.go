package suites

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"zerodrop/fixtures"
	"zerodrop/harness/incident"
	"zerodrop/harness/scenario"
)

// scaleDown scales the workload in under load, from one pod per node to a
// single pod: the pods go through the same termination as in a rollout,
// but nothing replaces them, so with Local most nodes lose their last
// endpoint while the LB may still send to them (the source-ip-dilemma and
// rolling-update-local incidents, docs/incidents.md).
func scaleDown() Scenario {
	return Scenario{
		Name: "scale-down",
		Description: "The Deployment is scaled from 3 replicas (one per worker) to 1 under load, as an autoscaler " +
			"scaling in would. Naive: no preStop, the app exits at once. Hardened: preStop covering the LB's lag, graceful drain.",
		Seeds:    []string{incident.SourceIPDilemma, incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.PodTermination},
		Cases:    matrix(clusterPolicy, localPolicy),
		Hazard: "pods that exit at once on SIGTERM refuse what is still sent to them; with Local, the nodes left " +
			"without an endpoint keep getting the LB's traffic until their health check fails (the window between " +
			"'endpoint removed' and 'LB marked the node unhealthy')",
		Limits: []Limit{
			{Proxy: withoutTerminatingEndpoints, NewConnections: true, Policy: localPolicy, Reason: noTerminatingEndpoints},
			{On: unhealthyResetsFlows, Policy: localPolicy, Reason: unhealthyResetsFlowsReason},
		},
		Body: runScaleDown,
		Cost: func(tm Timing, k Costs, c Cell) time.Duration {
			t := timesOf(c)
			return t.accepting + k.Terminate + t.settle(tm, true)
		},
	}
}

func runScaleDown(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	const from, to = 3, 1
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec {
		return s.spec(sc, c, fixtures.WithReplicas(from), fixtures.WithSpread(true))
	})
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	ws.Disrupt(fmt.Sprintf("scale every witness's workload from %d to %d replicas", from, to))
	// Witnesses that share Pods share the scale-down too: the Deployment
	// controller picks one set of victims for all of them.
	ws.EachWorkload(ctx, func(ctx context.Context, _ []int, r *scenario.Run) error {
		err := r.Kube.UpdateDeployment(ctx, r.Target.Namespace, r.Target.Workload, fmt.Sprintf("scale from %d to %d replicas", from, to),
			func(d *appsv1.Deployment) { n := int32(to); d.Spec.Replicas = &n })
		if err != nil {
			return err
		}
		return r.Kube.WaitWorkload(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Workload, s.Settings.ReadyTimeout)
	})
	return ws.Finish(ctx, s.settleEach(cells))
}
