package suites

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// drainNode drains the node that serves the most traffic (the drain-local-pdb
// and source-ip-dilemma incidents).
func drainNode() Scenario {
	return Scenario{
		Name:        "drain-node",
		Description: "kubectl drain of one node that holds endpoints, under load.",
		Seeds:       []string{incident.DrainLocalPDB, incident.SourceIPDilemma},
		Triggers:    []incident.Trigger{incident.PodTermination, incident.Eviction},
		Own:         true,
		Cases: slices.Concat(matrix(clusterPolicy, localPolicy), h2Cases(), documented(slices.Concat(grpcCases(), wsCases()), streamsStallOnDrain),
			gateCases("")),
		Prevented: []Prevention{{
			Hardening: fixtures.PreStopOnly, On: optionalGate,
			Why: "the evicted Pods' targets are deregistered as their endpoints start terminating, and their preStop " +
				"keeps them serving until that reached the LB; the Pods on the other nodes stay healthy targets " +
				"throughout, so a replacement still in its first checks is not needed (the gate matters where every " +
				"target is replaced: rolling-update)",
		}, {
			On: natPodTargets, Race: true,
			Why: "the LB deregisters an evicted Pod's target as its endpoint starts terminating and sends new connections " +
				"elsewhere from then on, and an NLB keeps a deregistered target's established connections; what a Pod that " +
				"stops listening at once can still refuse is what the LB sends it in its own reaction time (the cloud LB's " +
				"controller and nftables, tens to hundreds of milliseconds; a real NLB's propagation of a deregistration is " +
				"not documented and not modelled): a race one run may or may not show (aws-nlb-ip, 2026-11-28, zerodrop " +
				"a8d170b: naive 0 and 0 of 3,647, gate-only 1 refused; scale-down, where two of three Pods go at once, " +
				"5-6 refused in 0.6-0.8 s)",
		}},
		// The drained node gets no Pod back while the LB still counts it.
		Fate: recipe.Leaves,
		Hazard: "evicted pods that exit at once refuse what is still sent to them; with Local, the drained node " +
			"keeps getting the LB's traffic until its health check fails",
		Limits: drainLimits(),
		Body:   runDrainNode,
		// The drain waits for the evicted Pod's exit, its replacement
		// starts, and with Local the drained node leaves the LB.
		Cost: func(tm Timing, k Costs, _ Cell, t cellTimes) time.Duration {
			d := t.accepting + k.Terminate + t.replacement(k)
			return d + t.leaves(tm, d, t.replacement(k))
		},
	}
}

func runDrainNode(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec { return s.spec(sc, c, fixtures.WithReplicas(3)) })
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	// One drain for every witness: among the nodes that hold an endpoint
	// of the most witnesses, the one MetalLB announces the most Local
	// witnesses from, then the one that served the most answers over all
	// of them (sharedTarget). With Local behind an LB that sends everything
	// to one node (MetalLB L2) a node with an idle endpoint would prove
	// nothing; and a witness with no Pod on the drained node (a user's
	// single replica elsewhere) is not met by the drain at all.
	choice := sharedTarget(ctx, ws, cells, func(node string) string { return node }, "nodes",
		func(node string) string { return "drain-node: the drain of " + node })
	node := choice.Target
	if node == "" {
		return s.abandon(ctx, ws, fmt.Errorf("drain-node: no witness has an endpoint with a node name"))
	}
	_ = ws.Events().Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventNote, Object: "node/" + node,
		Message: "chosen for the drain: " + choice.Why()})
	s.Cleanup(func(ctx context.Context) error { return ws.Kube().Uncordon(ctx, node) })
	ws.Disrupt("drain of node " + node)
	res := ws.Kube().Drain(ctx, node, s.drainTimeout(ws, s.Timing.NodeDrain))
	switch {
	case res.Completed:
	case ownOnly(cells):
		// A user's PodDisruptionBudget may hold the drain for good (the
		// drain-local-pdb incident): that is the disruption their workload
		// meets, and what the LB does meanwhile is the measurement.
		ws.Kube().Note("node/"+node, fmt.Sprintf("drain gave up after %s (%v); pods left on the cordoned node: %s",
			res.Took.Round(time.Second), res.Err, strings.Join(res.Remaining, ", ")))
	default:
		return s.abandon(ctx, ws, fmt.Errorf("drain-node: drain of %s did not complete: %w", node, res.Err))
	}
	ws.Each(ctx, func(ctx context.Context, _ int, r *scenario.Run) error {
		return r.Kube.WaitWorkload(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Workload, s.rolloutTimeout(r))
	})
	return ws.Finish(ctx, s.settleEach(cells))
}
