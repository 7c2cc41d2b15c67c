package suites

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"zerodrop/fixtures"
	"zerodrop/harness/contract"
	"zerodrop/harness/incident"
	"zerodrop/harness/scenario"
)

// metallbNewAnnouncer is why a hardened Local workload that moves to a node
// without endpoints cannot be drop-free behind MetalLB L2.
const metallbNewAnnouncer = "MetalLB L2 with externalTrafficPolicy Local announces the VIP from the first node, by " +
	"sha256(node + \"#\" + VIP), among the nodes with a serving endpoint (metallb v0.15.2 speaker/layer2_controller.go " +
	"ShouldAnnounce). When the workload's first endpoint on a new node wins that order, the VIP moves there the moment " +
	"the endpoint turns ready, with the client's open keep-alive connections, before that node's kube-proxy has " +
	"programmed the endpoint: requests in flight on them time out. No Deployment setting orders the two. Measured " +
	"on this suite's kind cluster: 1 timeout on a reused connection 67-97 ms after the endpoint on pool-c appeared, " +
	"in both runs of 2026-11-22; whether it happens depends on the node names and the VIP (the hash)."

// nodepoolReplacement moves the workload to a new pool and removes the old
// one, under load (the drain-local-pdb and nodepool-backend incidents).
func nodepoolReplacement() Scenario {
	return Scenario{
		Name:           "nodepool-replacement",
		Description:    "Add pool-c, move the workload there by node affinity, remove the old pool, all under load.",
		Seeds:          []string{incident.DrainLocalPDB, incident.NodepoolBackend},
		Triggers:       []incident.Trigger{incident.Rollout, incident.PodTermination, incident.Placement},
		NeedsNodepools: true,
		Cases:          matrix(localPolicy),
		Hazard: "pods that exit at once on SIGTERM refuse what is still sent to them while the workload moves; " +
			"the old pool's nodes keep getting the LB's traffic until their health check fails",
		Limits: []Limit{{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbNewAnnouncer}},
		Body:   runNodepoolReplacement,
	}
}

func runNodepoolReplacement(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	if err := s.AddPoolLater(ctx, "pool-c"); err != nil {
		return failEvery(cells, err)
	}
	// pool-b is replaced: put one back afterwards so later runs find the
	// default topology.
	s.Cleanup(func(ctx context.Context) error { return s.RestorePool(ctx, "pool-b", 1) })
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec {
		return s.spec(sc, c, fixtures.WithReplicas(2), fixtures.WithPools("pool-b"))
	})
	if err := s.AddPool(ctx, ws, "pool-c", 1); err != nil {
		return s.abandon(ctx, ws, err)
	}
	ws.Each(ctx, func(ctx context.Context, i int, r *scenario.Run) error {
		target, err := fixtures.NewConfig(append(r.Spec.Workload, fixtures.WithPools("pool-c"))...)
		if err != nil {
			return err
		}
		affinity := fixtures.BuildDeployment(target).Spec.Template.Spec.Affinity
		if err := r.Kube.UpdateDeployment(ctx, r.Target.Namespace, r.Target.Workload, "move the workload to pool-c",
			func(d *appsv1.Deployment) { d.Spec.Template.Spec.Affinity = affinity }); err != nil {
			return err
		}
		if err := r.Kube.WaitWorkload(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Workload, s.rolloutTimeout(r)); err != nil {
			return err
		}
		return s.awaitLB(ctx, cells[i], r)
	})
	// Every witness has moved and its LB has had its lag to follow: the old
	// pool goes, once, under all of them.
	if err := s.Provider.RemoveNodePool(ctx, "pool-b"); err != nil {
		return s.abandon(ctx, ws, fmt.Errorf("nodepool-replacement: remove pool-b: %w", err))
	}
	return ws.Finish(ctx, s.settleEach(cells))
}
