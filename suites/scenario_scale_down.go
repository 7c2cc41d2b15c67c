package suites

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/incident"
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
		Seeds: []string{incident.SourceIPDilemma, incident.RollingUpdateLocal},
		Cases: matrix(clusterPolicy, localPolicy),
		Body:  runScaleDown,
	}
}

func runScaleDown(ctx context.Context, s *Suite, sc Scenario, c Case) (zdv1.Scenario, error) {
	const from, to = 3, 1
	run, err := s.Begin(ctx, s.spec(sc, c, fixtures.WithReplicas(from), fixtures.WithSpread(true)))
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.Timing.Baseline); err != nil {
		return zdv1.Scenario{}, err
	}
	err = run.Kube.UpdateDeployment(ctx, run.Config.Namespace, run.Config.Name, fmt.Sprintf("scale from %d to %d replicas", from, to),
		func(d *appsv1.Deployment) { n := int32(to); d.Spec.Replicas = &n })
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Kube.WaitRollout(ctx, run.Config.Namespace, run.Config.Name, s.Settings.ReadyTimeout); err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return zdv1.Scenario{}, err
	}
	return run.Finish(ctx)
}
