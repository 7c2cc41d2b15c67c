package suites

import (
	"context"
	"fmt"
	"time"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/contract"
	"zerodrop/harness/incident"
)

// drainNode drains the node that serves the most traffic (the drain-local-pdb
// and source-ip-dilemma incidents).
func drainNode() Scenario {
	return Scenario{
		Name:        "drain-node",
		Description: "kubectl drain of one node that holds endpoints, under load.",
		Seeds:       []string{incident.DrainLocalPDB, incident.SourceIPDilemma},
		Cases:       matrix(clusterPolicy, localPolicy),
		Limits:      []Limit{{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbAnnouncerLeaves}},
		Body:        runDrainNode,
	}
}

func runDrainNode(ctx context.Context, s *Suite, sc Scenario, c Case) (zdv1.Scenario, error) {
	sp := s.spec(sc, c, fixtures.WithReplicas(3))
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	eps, err := run.Kube.Endpoints(ctx, run.Config.Namespace, run.Config.Name)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if len(eps) == 0 || eps[0].Node == "" {
		return zdv1.Scenario{}, fmt.Errorf("drain-node: no endpoint with a node name in %+v", eps)
	}
	if err := run.Settle(ctx, s.Timing.Baseline); err != nil {
		return zdv1.Scenario{}, err
	}
	// Drain the node that serves the most traffic: with Local behind an LB
	// that sends everything to one node (MetalLB L2) a node with an idle
	// endpoint would prove nothing.
	served := run.Snapshot().ByNode
	nodes := make([]string, 0, len(eps))
	for _, ep := range eps {
		if ep.Node != "" {
			nodes = append(nodes, ep.Node)
		}
	}
	node := busiest(nodes, served)
	_ = run.Events().Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventNote, Object: "node/" + node,
		Message: fmt.Sprintf("chosen for the drain: it served %d of the %d answers so far (per node: %v)", served[node], sumCounts(served), served)})
	s.Cleanup(func(ctx context.Context) error { return run.Kube.Uncordon(ctx, node) })
	res := run.Kube.Drain(ctx, node, s.Timing.NodeDrain)
	if !res.Completed {
		return zdv1.Scenario{}, fmt.Errorf("drain-node: drain of %s did not complete: %w", node, res.Err)
	}
	if err := run.Kube.WaitRollout(ctx, run.Config.Namespace, run.Config.Name, s.Settings.ReadyTimeout); err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return zdv1.Scenario{}, err
	}
	return run.Finish(ctx)
}
