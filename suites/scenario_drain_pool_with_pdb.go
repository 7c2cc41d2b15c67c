package suites

import (
	"context"
	"fmt"
	"strings"
	"time"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/contract"
	"zerodrop/harness/incident"
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
		NeedsNodepools: true,
		Cases:          matrix(localPolicy),
		Limits:         []Limit{{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbAnnouncerLeaves}},
		Body:           runDrainPoolWithPDB,
	}
}

func runDrainPoolWithPDB(ctx context.Context, s *Suite, sc Scenario, c Case) (zdv1.Scenario, error) {
	pdb := fixtures.PDBAllowOne
	if c.Profile == fixtures.Naive {
		pdb = fixtures.PDBBlocking
	}
	// The workload may run on the old pool (pool-a) and the new one
	// (pool-c); pool-c does not exist yet, so it starts on pool-a only.
	sp := s.spec(sc, c, fixtures.WithReplicas(2), fixtures.WithPools("pool-a", "pool-c"), fixtures.WithPDB(pdb))
	// Registered before Begin so the namespace goes first, then the pool.
	if err := s.AddPoolLater(ctx, "pool-c"); err != nil {
		return zdv1.Scenario{}, err
	}
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if err := s.AddPool(ctx, run, "pool-c", 1); err != nil {
		return zdv1.Scenario{}, err
	}
	old, err := run.Kube.NodesInPool(ctx, "pool-a")
	if err != nil {
		return zdv1.Scenario{}, err
	}
	s.Cleanup(func(ctx context.Context) error {
		var errs []string
		for _, n := range old {
			if err := run.Kube.Uncordon(ctx, n); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("uncordon pool-a: %s", strings.Join(errs, "; "))
		}
		return nil
	})
	for _, n := range old {
		if err := run.Kube.Cordon(ctx, n); err != nil {
			return zdv1.Scenario{}, err
		}
	}
	results := run.Kube.DrainAll(ctx, old, s.Timing.PoolDrain)
	for _, r := range results {
		if !r.Completed {
			run.Kube.Note("node/"+r.Node, fmt.Sprintf("drain blocked after %s; pods left on the cordoned node: %s",
				r.Took.Round(time.Second), strings.Join(r.Remaining, ", ")))
			if c.Profile == fixtures.Hardened {
				return zdv1.Scenario{}, fmt.Errorf("drain-pool-with-pdb: the hardened PDB should let the drain of %s progress: %w", r.Node, r.Err)
			}
		}
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return zdv1.Scenario{}, err
	}
	run.Kube.Note("cluster", "state at the end:\n"+run.Observer.Describe())
	return run.Finish(ctx)
}
