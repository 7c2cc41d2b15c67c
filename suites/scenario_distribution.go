package suites

import (
	"context"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// distribution measures per-pod shares over two pools and names pods that get
// nothing (the nodepool-backend incident).
func distribution() Scenario {
	return Scenario{
		Name:        "distribution",
		Description: "Per-pod traffic shares with one pod per node over two pools; pods that get nothing are flagged.",
		Seeds:       []string{incident.NodepoolBackend},
		Triggers:    []incident.Trigger{incident.Placement},
		Cases: []Case{
			{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: false, Role: zdv1.RoleAssertion},
			{Policy: localPolicy, Hardening: fixtures.Hardened, KeepAlive: false, Role: zdv1.RoleDocumentation},
		},
		Hazard: "with Local, pods on nodes the LB does not send to get no traffic at all",
		Prevented: []Prevention{{
			On: podTargets,
			Why: "the LB's targets are the Pods themselves (container-native load balancing): it spreads requests " +
				"over every registered Pod whose check passes, whatever node or pool it runs on (internal/cloudlb, Pod targets)",
		}, {
			Policy: localPolicy,
			On:     func(m Model) bool { return m.Cloud && m.Profile.Eligibility.DefaultPool == "" },
			Why: "the LB takes every node as a backend and sends to each node whose health check passes, which with " +
				"Local is every node with a ready endpoint, so every pod gets its share (harness/lb: the service " +
				"controller's backend rule of the cluster's Kubernetes version)",
		}, {
			Policy: localPolicy, On: ecmpModel, Race: true,
			Why: "every node with a serving local endpoint advertises the address (metallb v0.15.2 " +
				"speaker/bgp_controller.go ShouldAnnounce; kube-vip v0.9.2 pkg/manager/watch_endpoints.go), and the " +
				"router spreads flows over them by its hash: with the suite's default l4 hash (source port included) " +
				"the client's connections reach every node, so every pod gets its share (measured 2026-11-29, " +
				"connection per request: metallb-bgp and kube-vip-bgp 0 pods without traffic); with ROUTER_HASH=l3 one " +
				"client's flows all take one node, and the pods elsewhere get nothing",
		}},
		Body: runDistribution,
		Cost: observeCost(func(tm Timing) time.Duration { return tm.ObserveShares }),
	}
}

func runDistribution(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec {
		sp := s.spec(sc, c, fixtures.WithReplicas(3), fixtures.WithSpread(true), fixtures.WithPools("pool-a", "pool-b"))
		sp.Criteria.RequireAllPodsServed = true
		sp.Criteria.MinPodShare = zdv1.Float64(0.15)
		// Nothing is disrupted: a request that fails is the ground moving.
		sp.Criteria.Undisturbed = true
		return sp
	})
	ws.Each(ctx, func(ctx context.Context, _ int, r *scenario.Run) error {
		_, err := r.ExpectPods(ctx)
		return err
	})
	return ws.Finish(ctx, settleFor(s.Timing.ObserveShares))
}
