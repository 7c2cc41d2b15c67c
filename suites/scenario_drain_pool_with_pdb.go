package suites

import (
	"context"
	"fmt"
	"strings"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// drainPoolWithPDB adds a pool and drains the old one at once, with a PDB that
// blocks every eviction (naive) or lets the drain progress (hardened): the
// drain-local-pdb incident.
func drainPoolWithPDB() Scenario {
	return Scenario{
		Name: "drain-pool-with-pdb",
		Description: "A new pool is added, then the old pool is cordoned and drained at once. Naive: a PDB that blocks " +
			"every eviction keeps the pods on the cordoned nodes. Hardened: a PDB that lets the drain progress.",
		Seeds:          []string{incident.DrainLocalPDB},
		Triggers:       []incident.Trigger{incident.PodTermination, incident.Eviction, incident.PoolDrain},
		Own:            true,
		NeedsNodepools: true,
		Cases:          matrix(localPolicy),
		// The cordoned pool gets no Pod back while the LB still counts it.
		Fate: recipe.Leaves,
		Hazard: "the LB drops the cordoned nodes from its backends while the PDB keeps every pod on them: with Local " +
			"no other node has an endpoint, so the Service is blackholed",
		Prevented: []Prevention{{
			On: podTargets,
			Why: "the LB's targets are the Pods themselves: a cordon changes nothing for it, and the Pods the PDB " +
				"holds on the cordoned nodes keep serving until each is evicted and deregistered (internal/cloudlb, Pod targets)",
		}, {
			On: func(m Model) bool { return !m.Profile.Eligibility.ExcludeUnschedulable },
			Why: "the LB keeps cordoned nodes as backends, so the pods the PDB holds on them keep serving: only the " +
				"service controller of Kubernetes 1.18 and older dropped unschedulable nodes (kubernetes/kubernetes " +
				"pkg/controller/service, the node predicate; profile field eligibility.excludeUnschedulable)",
		}},
		Limits: []Limit{
			{Proxy: withoutTerminatingEndpoints, NewConnections: true, Policy: localPolicy, Reason: noTerminatingEndpoints},
			{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbAnnouncerLeaves},
			{On: kubeVIPModel, Policy: localPolicy, Reason: kubeVIPAnnouncerLeaves},
			// pool-c joins under load: its first endpoint may win MetalLB's
			// election and take the VIP before pool-a is drained.
			{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbNewAnnouncer},
			{On: cordonDropsFlows, Policy: localPolicy, Reason: cordonDropsFlowsReason},
			{On: unhealthyResetsFlows, Policy: localPolicy, Reason: unhealthyResetsFlowsReason},
			{On: singlePool, Policy: localPolicy, Reason: singlePoolReplaced},
			{On: bgpModel, Policy: localPolicy, Reason: ecmpRehash},
			{On: kubeVIPBGPModel, Policy: localPolicy, Reason: kubeVIPRehash},
		},
		Body: runDrainPoolWithPDB,
		// A pool joins; a naive witness's blocking budget holds the drain
		// to its bound, a hardened one lets it through; the old nodes leave
		// the LB.
		Cost: func(tm Timing, k Costs, c Cell, t cellTimes) time.Duration {
			drain := t.accepting + k.Terminate
			if c.Hardening == fixtures.Naive {
				drain = tm.PoolDrain
			}
			return k.PoolAdd + drain + t.leaves(tm, drain, 0)
		},
	}
}

func runDrainPoolWithPDB(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	// Registered before Begin so the namespaces go first, then the pool.
	if err := s.AddPoolLater(ctx, "pool-c"); err != nil {
		return failEvery(cells, err)
	}
	// The workload may run on the old pool (pool-a) and the new one
	// (pool-c); pool-c does not exist yet, so it starts on pool-a only.
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec {
		pdb := fixtures.PDBAllowOne
		if c.Hardening == fixtures.Naive {
			pdb = fixtures.PDBBlocking
		}
		return s.spec(sc, c, fixtures.WithReplicas(2), fixtures.WithPools("pool-a", "pool-c"), fixtures.WithPDB(pdb))
	})
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	// The new pool joining is part of the replacement the incident is
	// about: the LB takes new backends while the old ones are drained.
	ws.Disrupt("pool-a replaced by pool-c: pool-c joins, pool-a is cordoned and drained")
	if err := s.AddPool(ctx, ws, "pool-c", 1, PoolShape{}); err != nil {
		return s.abandon(ctx, ws, err)
	}
	k := ws.Kube()
	old, err := k.NodesInPool(ctx, "pool-a")
	if err != nil {
		return s.abandon(ctx, ws, err)
	}
	s.Cleanup(func(ctx context.Context) error {
		var errs []string
		for _, n := range old {
			if err := k.Uncordon(ctx, n); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("uncordon pool-a: %s", strings.Join(errs, "; "))
		}
		return nil
	})
	for _, n := range old {
		if err := k.Cordon(ctx, n); err != nil {
			return s.abandon(ctx, ws, err)
		}
	}
	// The naive witnesses' PDBs block their pods for good, so the drain runs
	// until its timeout: long enough for every hardened pod to get through
	// its own termination.
	remaining := map[string]bool{}
	for _, r := range k.DrainAll(ctx, old, s.drainTimeout(ws, s.Timing.PoolDrain)) {
		if !r.Completed {
			k.Note("node/"+r.Node, fmt.Sprintf("drain gave up after %s; pods left on the cordoned node: %s",
				r.Took.Round(time.Second), strings.Join(r.Remaining, ", ")))
		}
		for _, p := range r.Remaining {
			remaining[p] = true
		}
	}
	for _, i := range ws.Live() {
		if cells[i].Hardening != fixtures.Hardened {
			continue
		}
		r, _ := ws.Run(i)
		for p := range remaining {
			if strings.HasPrefix(p, r.Target.Namespace+"/") {
				ws.Fail(i, fmt.Errorf("drain-pool-with-pdb: the hardened PDB should let the drain of pool-a progress, but %s is still on it", p))
				break
			}
		}
	}
	return ws.Finish(ctx, s.settleEach(cells))
}
