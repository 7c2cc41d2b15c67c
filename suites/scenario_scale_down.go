package suites

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/harness/scenario"
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
		Cases:    slices.Concat(matrix(clusterPolicy, localPolicy), h2Cases(), grpcCases(), wsCases(), gateCases("")),
		Prevented: []Prevention{{
			Hardening: fixtures.PreStopOnly, On: optionalGate,
			Why: "nothing replaces the removed Pods, so the gate has nothing to hold: their targets are deregistered " +
				"as their endpoints start terminating, their preStop keeps them serving until that reached the LB, " +
				"and the Pod that stays was a healthy target throughout",
		}},
		// The nodes of the Pods removed get none back.
		Fate: recipe.Leaves,
		Hazard: "pods that exit at once on SIGTERM refuse what is still sent to them; with Local, the nodes left " +
			"without an endpoint keep getting the LB's traffic until their health check fails (the window between " +
			"'endpoint removed' and 'LB marked the node unhealthy')",
		Limits: []Limit{
			{Proxy: withoutTerminatingEndpoints, NewConnections: true, Policy: localPolicy, Reason: noTerminatingEndpoints},
			{On: unhealthyResetsFlows, Policy: localPolicy, Reason: unhealthyResetsFlowsReason},
			{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbAnnouncerLeaves},
			{On: kubeVIPModel, Policy: localPolicy, Reason: kubeVIPAnnouncerLeaves},
			{On: bgpModel, Policy: localPolicy, Reason: ecmpRehash},
			{On: kubeVIPBGPModel, Policy: localPolicy, Reason: kubeVIPRehash},
		},
		Body: runScaleDown,
		Cost: func(tm Timing, k Costs, _ Cell, t cellTimes) time.Duration {
			return t.accepting + k.Terminate + t.leaves(tm, t.accepting+k.Terminate, 0)
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
	// The Deployment controller would pick its victims by its own ranks;
	// a MetalLB Local witness is only met by one that takes the Pod on the
	// node announcing its address, so those Pods go first.
	entries := announcers(ctx, ws, cells)
	ws.EachWorkload(ctx, func(ctx context.Context, sharers []int, r *scenario.Run) error {
		return aimScaleDown(ctx, r, cells, sharers, entries, from-to)
	})
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

// aimScaleDown makes a scale-down by n of r's workload take first the
// Pods on the nodes where its sharers' traffic enters (entries: MetalLB L2
// with Local; the witnesses that document the hazard first), at most n:
// each gets a deletion cost below the others' default 0, which the
// ReplicaSet controller weighs before its own ranks (kube.SetDeletionCost).
// With shared Pods the victims are one sample for every column; this
// makes it the one a MetalLB Local witness's hazard needs, and any other
// column is met by any victim alike.
func aimScaleDown(ctx context.Context, r *scenario.Run, cells []Cell, sharers []int, entries map[int]string, n int) error {
	var nodes, whose []string
	for _, hazard := range []bool{true, false} {
		for _, i := range sharers {
			node, ok := entries[i]
			if !ok || documentsHazard(cells[i]) != hazard || slices.Contains(nodes, node) || len(nodes) == n {
				continue
			}
			nodes, whose = append(nodes, node), append(whose, cells[i].Name())
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	pods, err := r.Pods(ctx)
	if err != nil {
		return err
	}
	for k, node := range nodes {
		for _, p := range pods {
			if p.Spec.NodeName != node || p.DeletionTimestamp != nil {
				continue
			}
			why := fmt.Sprintf("the scale-down takes this Pod first: it runs on %s, where its LB announces the address of %s (Local)", node, whose[k])
			if err := r.Kube.SetDeletionCost(ctx, p.Namespace, p.Name, -1, why); err != nil {
				return err
			}
		}
	}
	return nil
}
