package suites

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/contract"
	"zerodrop/harness/incident"
	"zerodrop/harness/scenario"
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
		Cases:       matrix(clusterPolicy, localPolicy),
		Hazard: "evicted pods that exit at once refuse what is still sent to them; with Local, the drained node " +
			"keeps getting the LB's traffic until its health check fails",
		Limits: []Limit{
			{Proxy: withoutTerminatingEndpoints, NewConnections: true, Policy: localPolicy, Reason: noTerminatingEndpoints},
			{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbAnnouncerLeaves},
			{On: cordonDropsFlows, Policy: clusterPolicy, Reason: cordonDropsFlowsReason},
			{On: cordonDropsFlows, Policy: localPolicy, Reason: cordonDropsFlowsReason},
			{On: unhealthyResetsFlows, Policy: localPolicy, Reason: unhealthyResetsFlowsReason},
		},
		Body: runDrainNode,
		// The drain waits for the evicted Pod's exit, its replacement
		// starts, and with Local the drained node leaves the LB.
		Cost: func(tm Timing, k Costs, c Cell) time.Duration {
			t := timesOf(c)
			return t.accepting + k.Terminate + k.PodStart + t.minReady + t.settle(tm, true)
		},
	}
}

// drainTarget is the node holding endpoints of the most witnesses (covers)
// and, among those, serving the most answers; "" when none.
func drainTarget(covers map[string]int, served map[string]int64) string {
	most := 0
	for _, c := range covers {
		most = max(most, c)
	}
	var nodes []string
	for n, c := range covers {
		if c == most {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	return busiest(nodes, served)
}

// NotMetError is a witness a shared disruption did not meet: its Pods run
// where the disruption was not (a user's single replica on another node or
// pool). Nothing was measured; run on its own, the disruption goes where
// its Pods are.
type NotMetError struct{ msg string }

func (e *NotMetError) Error() string { return e.msg }

// endpointNodes is, for every live witness, the places (where(node): the
// node itself, or its pool) holding one of its endpoints, and the answers
// each place served so far over all witnesses. A witness whose endpoints
// cannot be read fails.
func endpointNodes(ctx context.Context, ws *scenario.Witnesses, where func(node string) string) (holds map[int]map[string]bool, served map[string]int64) {
	holds, served = map[int]map[string]bool{}, map[string]int64{}
	for _, i := range ws.Live() {
		r, _ := ws.Run(i)
		eps, err := r.Kube.Endpoints(ctx, r.Target.Namespace, r.Target.Service)
		if err != nil {
			ws.Fail(i, err)
			continue
		}
		snap := r.Snapshot().ByNode
		holds[i] = map[string]bool{}
		seen := map[string]bool{}
		for _, ep := range eps {
			if ep.Node == "" || seen[ep.Node] {
				continue // a node's answers count once per witness
			}
			seen[ep.Node] = true
			at := where(ep.Node)
			served[at] += snap[ep.Node]
			holds[i][at] = true
		}
	}
	return holds, served
}

// sharedTarget is where one disruption for every witness goes: among the
// places (where(node): a node, or its pool) holding endpoints of the most
// witnesses, the one that served the most answers; "" when none ("" is no
// place: a node outside every pool is never a pool's). A witness with no
// endpoint there is set aside with a NotMetError saying that missed(target)
// (the drain of a node, replacing a pool) does not meet it. covers counts
// the witnesses per place, served their answers so far.
func sharedTarget(ctx context.Context, ws *scenario.Witnesses, where func(node string) string, kind string, missed func(target string) string) (target string, covers map[string]int, served map[string]int64) {
	holds, served := endpointNodes(ctx, ws, where)
	covers = map[string]int{}
	for _, h := range holds {
		for at := range h {
			if at != "" {
				covers[at]++
			}
		}
	}
	target = drainTarget(covers, served)
	if target == "" {
		return "", covers, served
	}
	for i, h := range holds {
		if !h[target] {
			ws.Fail(i, &NotMetError{fmt.Sprintf("%s does not meet this witness: none of its endpoints runs there (%s %v); nothing was measured",
				missed(target), kind, slices.Sorted(maps.Keys(h)))})
		}
	}
	return target, covers, served
}

func runDrainNode(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec { return s.spec(sc, c, fixtures.WithReplicas(3)) })
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	// One drain for every witness: among the nodes that hold an endpoint
	// of the most witnesses, the one that served the most answers over all
	// of them. With Local behind an LB that sends everything to one node
	// (MetalLB L2) a node with an idle endpoint would prove nothing; and a
	// witness with no Pod on the drained node (a user's single replica
	// elsewhere) is not met by the drain at all.
	node, _, served := sharedTarget(ctx, ws, func(node string) string { return node }, "nodes",
		func(node string) string { return "drain-node: the drain of " + node })
	if node == "" {
		return s.abandon(ctx, ws, fmt.Errorf("drain-node: no witness has an endpoint with a node name"))
	}
	_ = ws.Events().Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventNote, Object: "node/" + node,
		Message: fmt.Sprintf("chosen for the drain: it served %d of the %d answers so far over all witnesses (per node: %v)", served[node], sumCounts(served), served)})
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
