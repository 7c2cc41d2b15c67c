package suites

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"zerodrop/fixtures"
	"zerodrop/harness/incident"
	"zerodrop/harness/runfile"
	"zerodrop/harness/scenario"
	"zerodrop/reports"
)

// Case is one cell of a scenario's matrix.
type Case struct {
	Policy  corev1.ServiceExternalTrafficPolicy
	Profile fixtures.Profile
	// KeepAlive is the client's and the server's keep-alive (unready-keepalive
	// varies it; every other scenario keeps it on).
	KeepAlive bool
	// Role says whether the case asserts zero drops (assertion) or documents
	// a hazard (documentation: reported, fails only when the run breaks).
	Role reports.Role
	// Smoke puts the case in `make e2e-smoke`, which `make test` runs where
	// Docker can.
	Smoke bool
	// PlatformLimit is set by CasesOn when the LB under test cannot give
	// this case zero drops; the case then documents instead of asserting.
	PlatformLimit string
}

// Name is the case's part of the spec name: "local/hardened".
func (c Case) Name() string {
	n := strings.ToLower(string(c.Policy)) + "/" + string(c.Profile)
	if !c.KeepAlive {
		n += "/no-keepalive"
	}
	return n
}

// Labels are the Ginkgo labels of the case (besides the scenario's).
func (c Case) Labels() []string {
	l := []string{"policy:" + strings.ToLower(string(c.Policy)), "profile:" + string(c.Profile), "role:" + string(c.Role)}
	if !c.KeepAlive {
		l = append(l, "keepalive:off")
	}
	if c.Smoke {
		l = append(l, "smoke")
	}
	return l
}

// Body runs one case and returns its measured outcome. A returned error
// means the run broke (the spec fails with it); a FAIL verdict is returned
// as a scenario, not an error.
type Body func(ctx context.Context, s *Suite, c Case) (reports.Scenario, error)

// Scenario is one incident reproduced on a cluster.
type Scenario struct {
	Name        string
	Description string
	// Seeds are the incidents the scenario reproduces (harness/incident,
	// told in docs/incidents.md).
	Seeds []string
	// NeedsNodepools marks scenarios that add or remove nodepools (the
	// existing provider cannot).
	NeedsNodepools bool
	Cases          []Case
	// Limits are platform behaviours, each found by measurement, that make
	// zero drops impossible for the scenario's hardened cases on one LB.
	Limits []Limit
	Body   Body
}

// Limit turns a scenario's assertion cases with Policy into documentation
// when the suite runs on LB, with Reason in the report. It is data, reviewed
// like code: a limit must name the mechanism and the runs that showed it.
type Limit struct {
	LB     string
	Policy corev1.ServiceExternalTrafficPolicy
	Reason string
}

// CasesOn is the scenario's cases on one LB implementation: assertion cases
// that a Limit covers become documentation and carry its reason.
func (sc Scenario) CasesOn(lb string) []Case {
	out := append([]Case(nil), sc.Cases...)
	for i, c := range out {
		for _, l := range sc.Limits {
			if l.LB == lb && l.Policy == c.Policy && c.Role == reports.RoleAssertion {
				out[i].Role, out[i].PlatformLimit = reports.RoleDocumentation, l.Reason
			}
		}
	}
	return out
}

// metallbNewAnnouncer is why a hardened Local workload that moves to a node
// without endpoints cannot be drop-free behind MetalLB L2.
const metallbNewAnnouncer = "MetalLB L2 with externalTrafficPolicy Local announces the VIP from the first node, by " +
	"sha256(node + \"#\" + VIP), among the nodes with a serving endpoint (metallb v0.15.2 speaker/layer2_controller.go " +
	"ShouldAnnounce). When the workload's first endpoint on a new node wins that order, the VIP moves there the moment " +
	"the endpoint turns ready, with the client's open keep-alive connections, before that node's kube-proxy has " +
	"programmed the endpoint: requests in flight on them time out. No Deployment setting orders the two. Measured " +
	"on this suite's kind cluster: 1 timeout on a reused connection 67-97 ms after the endpoint on pool-c appeared, " +
	"in both runs of 2026-11-22; whether it happens depends on the node names and the VIP (the hash)."

var (
	localPolicy   = corev1.ServiceExternalTrafficPolicyLocal
	clusterPolicy = corev1.ServiceExternalTrafficPolicyCluster
)

// matrix is every policy x profile with the usual roles: hardened asserts,
// naive documents.
func matrix(policies ...corev1.ServiceExternalTrafficPolicy) []Case {
	var out []Case
	for _, p := range policies {
		out = append(out,
			Case{Policy: p, Profile: fixtures.Naive, KeepAlive: true, Role: reports.RoleDocumentation},
			Case{Policy: p, Profile: fixtures.Hardened, KeepAlive: true, Role: reports.RoleAssertion})
	}
	return out
}

// Scenarios is the registry, in the order the suite runs them (nodepool
// replacement last: it re-pools the cluster).
func Scenarios() []Scenario {
	rolling := matrix(clusterPolicy, localPolicy)
	for i := range rolling {
		if rolling[i].Policy == clusterPolicy && rolling[i].Profile == fixtures.Hardened {
			rolling[i].Smoke = true
		}
	}
	return []Scenario{
		{
			Name: "rolling-update",
			Description: "kubectl rollout restart of the workload under load. Naive: no preStop, the app exits at once, " +
				"probe defaults. Hardened: preStop covering the LB's lag, graceful drain, surge rollout, minReadySeconds.",
			Seeds: []string{incident.RollingUpdateLocal, incident.SourceIPDilemma},
			Cases: rolling,
			Body:  rollingUpdate,
		},
		{
			Name:        "source-ip",
			Description: "Does the pod see the load generator's address? Local must preserve it; Cluster SNATs it away.",
			Seeds:       []string{incident.NodepoolBackend, incident.SourceIPDilemma},
			Cases: []Case{
				{Policy: localPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: reports.RoleAssertion, Smoke: true},
				{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: reports.RoleAssertion},
			},
			Body: sourceIP,
		},
		{
			Name:        "distribution",
			Description: "Per-pod traffic shares with one pod per node over two pools; pods that get nothing are flagged.",
			Seeds:       []string{incident.NodepoolBackend},
			Cases: []Case{
				{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: reports.RoleAssertion},
				{Policy: localPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: reports.RoleDocumentation},
			},
			Body: distribution,
		},
		{
			Name: "unready-keepalive",
			Description: "One pod is marked unready through its admin port while load runs; count what it still serves " +
				"after its endpoint is removed, with keep-alive on and off.",
			Seeds: []string{incident.KeepaliveUnready},
			Cases: []Case{
				{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: reports.RoleDocumentation},
				{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: reports.RoleAssertion},
			},
			Body: unreadyKeepalive,
		},
		{
			Name:        "drain-node",
			Description: "kubectl drain of one node that holds endpoints, under load.",
			Seeds:       []string{incident.DrainLocalPDB, incident.SourceIPDilemma},
			Cases:       matrix(clusterPolicy, localPolicy),
			Body:        drainNode,
		},
		{
			Name: "drain-pool-with-pdb",
			Description: "A new pool is added, then the old pool is cordoned and drained at once. Naive: a PDB that blocks " +
				"every eviction keeps the pods on the cordoned nodes. Hardened: a PDB that lets the drain progress.",
			Seeds:          []string{incident.DrainLocalPDB},
			NeedsNodepools: true,
			Cases:          matrix(localPolicy),
			Body:           drainPoolWithPDB,
		},
		{
			Name:           "nodepool-replacement",
			Description:    "Add pool-c, move the workload there by node affinity, remove the old pool, all under load.",
			Seeds:          []string{incident.DrainLocalPDB, incident.NodepoolBackend},
			NeedsNodepools: true,
			Cases:          matrix(localPolicy),
			Limits:         []Limit{{LB: "metallb", Policy: localPolicy, Reason: metallbNewAnnouncer}},
			Body:           nodepoolReplacement,
		},
	}
}

// spec is the common start of every case: the report's identity and the
// workload for the case's policy and profile.
func (s *Suite) spec(sc, what string, c Case, seeds []string, extra ...fixtures.Option) scenario.Spec {
	name := sc + "/" + c.Name()
	ns := "zd-" + scenario.DirName(strings.ReplaceAll(name, "/", "-"))
	if len(ns) > 63 {
		ns = ns[:63]
	}
	opts := []fixtures.Option{
		fixtures.WithProfile(c.Profile),
		fixtures.WithNamespace(ns),
		fixtures.WithPolicy(c.Policy),
		fixtures.WithLBHealthCheck(s.LBCheck),
		fixtures.WithKeepAlive(c.KeepAlive),
	}
	if s.LBProfileFor != nil {
		if p := s.LBProfileFor(sc); p != "" {
			opts = append(opts, fixtures.WithLBProfile(p))
		}
	}
	opts = append(opts, extra...)
	crit := reports.Criteria{MinRequests: int64(s.Settings.Rate) * 5}
	if c.Role == reports.RoleAssertion {
		crit.MaxDropped = reports.Int64(0)
	}
	ka := c.KeepAlive
	return scenario.Spec{
		ScenarioSpec: reports.ScenarioSpec{
			Name:          name,
			Role:          c.Role,
			Description:   what,
			Seeds:         seeds,
			PlatformLimit: c.PlatformLimit,
			Labels: map[string]string{
				"scenario": sc, "policy": string(c.Policy), "profile": string(c.Profile),
				"keepalive": fmt.Sprint(c.KeepAlive), "lb": s.Settings.LB, "provider": s.Settings.Provider,
			},
			Criteria: crit,
		},
		Workload:  opts,
		KeepAlive: &ka,
	}
}

// settleAfter is how long load keeps running after an action: the LB's
// removal lag plus a margin, so a late blackhole is measured too.
func (s *Suite) settleAfter() time.Duration { return s.LBCheck.RemovalLag() + 5*time.Second }

func rollingUpdate(ctx context.Context, s *Suite, c Case) (reports.Scenario, error) {
	sp := s.spec("rolling-update", "rollout restart under load", c, []string{incident.RollingUpdateLocal, incident.SourceIPDilemma},
		fixtures.WithReplicas(3))
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, 5*time.Second); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Kube.RolloutRestart(ctx, run.Config.Namespace, run.Config.Name, s.Settings.ReadyTimeout); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return reports.Scenario{}, err
	}
	return run.Finish(ctx)
}

func sourceIP(ctx context.Context, s *Suite, c Case) (reports.Scenario, error) {
	sp := s.spec("source-ip", "client address seen by the pods", c, []string{incident.NodepoolBackend, incident.SourceIPDilemma},
		fixtures.WithReplicas(2))
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	host, err := scenario.SourceAddress(run.Address)
	if err != nil {
		return reports.Scenario{}, err
	}
	// Local must keep the client's address; Cluster replaces it with a
	// node's (incident nodepool-backend: "better load balancing, but we lose the proper
	// source IP").
	err = run.SetCriteria(fmt.Sprintf("the load generator reaches %s from %s", run.Address, host), func(cr *reports.Criteria) {
		if c.Policy == localPolicy {
			cr.ExpectedClientIP = host
		} else {
			cr.ForbiddenClientIP = host
		}
	})
	if err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, 15*time.Second); err != nil {
		return reports.Scenario{}, err
	}
	return run.Finish(ctx)
}

func distribution(ctx context.Context, s *Suite, c Case) (reports.Scenario, error) {
	sp := s.spec("distribution", "per-pod shares, one pod per node over pool-a and pool-b", c, []string{incident.NodepoolBackend},
		fixtures.WithReplicas(3), fixtures.WithSpread(true), fixtures.WithPools("pool-a", "pool-b"))
	if c.Role == reports.RoleAssertion {
		sp.Criteria.RequireAllPodsServed = true
		sp.Criteria.MinPodShare = reports.Float64(0.15)
	}
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	if _, err := run.ExpectPods(ctx); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, 20*time.Second); err != nil {
		return reports.Scenario{}, err
	}
	return run.Finish(ctx)
}

func unreadyKeepalive(ctx context.Context, s *Suite, c Case) (reports.Scenario, error) {
	// A fast readiness probe, so the endpoint goes within seconds of the flip
	// and the run measures the keep-alive effect rather than probe timing.
	fast := &fixtures.Probe{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	sp := s.spec("unready-keepalive", "one pod turns unready while it stays alive", c, []string{incident.KeepaliveUnready},
		fixtures.WithReplicas(3), fixtures.WithReadiness(fast))
	sp.Connections = 12
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	pods, err := run.ExpectPods(ctx)
	if err != nil {
		return reports.Scenario{}, err
	}
	if len(pods) == 0 {
		return reports.Scenario{}, fmt.Errorf("unready-keepalive: no pods of %s", run.Config.Name)
	}
	if err := run.Settle(ctx, 5*time.Second); err != nil {
		return reports.Scenario{}, err
	}
	// The victim is the pod with the most answers so far: with keep-alive a
	// few connections carry the load and a pod may get none, and an idle pod
	// turning unready measures nothing.
	served := run.Snapshot().ByPod
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	victim := busiest(names, served)
	if served[victim] == 0 {
		return reports.Scenario{}, fmt.Errorf("unready-keepalive: no pod answered during the first 5s of load (per pod: %v); nothing to turn unready", served)
	}
	_ = run.Events().Event(runfile.Event{Time: time.Now(), Source: runfile.SourceHarness, Type: runfile.Note, Object: "pod/" + run.Config.Namespace + "/" + victim,
		Message: fmt.Sprintf("chosen to turn unready: it answered %d of the %d requests so far (per pod: %v)", served[victim], sumCounts(served), served)})
	// What the pod answers once its endpoint is gone is the hazard: none
	// may reach it after kube-proxy had time to apply the removal
	// (its sync period is about a second).
	const grace = 2 * time.Second
	err = run.SetCriteria("pod "+victim+" turns unready: count what it answers after its endpoint is removed", func(cr *reports.Criteria) {
		cr.ServedAfterRemoval = &reports.AfterRemovalLimit{Pod: victim, GraceMs: float64(grace / time.Millisecond), Max: 0}
	})
	if err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Kube.SetEchoReady(ctx, run.Config.Namespace, victim, false); err != nil {
		return reports.Scenario{}, err
	}
	if _, err := run.Kube.WaitReadyEndpoints(ctx, run.Config.Namespace, run.Config.Name, len(pods)-1, time.Minute); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, 15*time.Second); err != nil {
		return reports.Scenario{}, err
	}
	return run.Finish(ctx)
}

func drainNode(ctx context.Context, s *Suite, c Case) (reports.Scenario, error) {
	sp := s.spec("drain-node", "drain of a node holding endpoints", c, []string{incident.DrainLocalPDB, incident.SourceIPDilemma},
		fixtures.WithReplicas(3))
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	eps, err := run.Kube.Endpoints(ctx, run.Config.Namespace, run.Config.Name)
	if err != nil {
		return reports.Scenario{}, err
	}
	if len(eps) == 0 || eps[0].Node == "" {
		return reports.Scenario{}, fmt.Errorf("drain-node: no endpoint with a node name in %+v", eps)
	}
	if err := run.Settle(ctx, 5*time.Second); err != nil {
		return reports.Scenario{}, err
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
	_ = run.Events().Event(runfile.Event{Time: time.Now(), Source: runfile.SourceHarness, Type: runfile.Note, Object: "node/" + node,
		Message: fmt.Sprintf("chosen for the drain: it served %d of the %d answers so far (per node: %v)", served[node], sumCounts(served), served)})
	s.Cleanup(func(ctx context.Context) error { return run.Kube.Uncordon(ctx, node) })
	res := run.Kube.Drain(ctx, node, 3*time.Minute)
	if !res.Completed {
		return reports.Scenario{}, fmt.Errorf("drain-node: drain of %s did not complete: %w", node, res.Err)
	}
	if err := run.Kube.WaitRollout(ctx, run.Config.Namespace, run.Config.Name, s.Settings.ReadyTimeout); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return reports.Scenario{}, err
	}
	return run.Finish(ctx)
}

func drainPoolWithPDB(ctx context.Context, s *Suite, c Case) (reports.Scenario, error) {
	pdb := fixtures.PDBAllowOne
	if c.Profile == fixtures.Naive {
		pdb = fixtures.PDBBlocking
	}
	// The workload may run on the old pool (pool-a) and the new one
	// (pool-c); pool-c does not exist yet, so it starts on pool-a only.
	sp := s.spec("drain-pool-with-pdb", "new pool added, old pool cordoned and drained at once", c, []string{incident.DrainLocalPDB},
		fixtures.WithReplicas(2), fixtures.WithPools("pool-a", "pool-c"), fixtures.WithPDB(pdb))
	// Registered before Begin so the namespace goes first, then the pool.
	if err := s.AddPoolLater(ctx, "pool-c"); err != nil {
		return reports.Scenario{}, err
	}
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	if err := s.AddPool(ctx, run, "pool-c", 1); err != nil {
		return reports.Scenario{}, err
	}
	old, err := run.Kube.NodesInPool(ctx, "pool-a")
	if err != nil {
		return reports.Scenario{}, err
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
			return reports.Scenario{}, err
		}
	}
	drainTimeout := 60 * time.Second
	results := run.Kube.DrainAll(ctx, old, drainTimeout)
	for _, r := range results {
		if !r.Completed {
			run.Kube.Note("node/"+r.Node, fmt.Sprintf("drain blocked after %s; pods left on the cordoned node: %s",
				r.Took.Round(time.Second), strings.Join(r.Remaining, ", ")))
			if c.Profile == fixtures.Hardened {
				return reports.Scenario{}, fmt.Errorf("drain-pool-with-pdb: the hardened PDB should let the drain of %s progress: %w", r.Node, r.Err)
			}
		}
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return reports.Scenario{}, err
	}
	run.Kube.Note("cluster", "state at the end:\n"+run.Observer.Describe())
	return run.Finish(ctx)
}

func nodepoolReplacement(ctx context.Context, s *Suite, c Case) (reports.Scenario, error) {
	sp := s.spec("nodepool-replacement", "workload moved from pool-b to a new pool-c; pool-b removed", c,
		[]string{incident.DrainLocalPDB, incident.NodepoolBackend}, fixtures.WithReplicas(2), fixtures.WithPools("pool-b"))
	if err := s.AddPoolLater(ctx, "pool-c"); err != nil {
		return reports.Scenario{}, err
	}
	// pool-b is replaced: put one back afterwards so later runs find the
	// default topology.
	s.Cleanup(func(ctx context.Context) error { return s.RestorePool(ctx, "pool-b", 1) })
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return reports.Scenario{}, err
	}
	if err := s.AddPool(ctx, run, "pool-c", 1); err != nil {
		return reports.Scenario{}, err
	}
	target, err := fixtures.NewConfig(append(sp.Workload, fixtures.WithPools("pool-c"))...)
	if err != nil {
		return reports.Scenario{}, err
	}
	affinity := fixtures.BuildDeployment(target).Spec.Template.Spec.Affinity
	if err := run.Kube.UpdateDeployment(ctx, run.Config.Namespace, run.Config.Name, "move the workload to pool-c",
		func(d *appsv1.Deployment) { d.Spec.Template.Spec.Affinity = affinity }); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Kube.WaitRollout(ctx, run.Config.Namespace, run.Config.Name, s.Settings.ReadyTimeout); err != nil {
		return reports.Scenario{}, err
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return reports.Scenario{}, err
	}
	if err := s.Provider.RemoveNodePool(ctx, "pool-b"); err != nil {
		return reports.Scenario{}, fmt.Errorf("nodepool-replacement: remove pool-b: %w", err)
	}
	if err := run.Settle(ctx, s.settleAfter()); err != nil {
		return reports.Scenario{}, err
	}
	return run.Finish(ctx)
}

// busiest is the candidate (node or pod) with the most answers in served,
// the first one on a tie or when none has answered; "" without candidates.
func busiest(candidates []string, served map[string]int64) string {
	best := ""
	for i, c := range candidates {
		if i == 0 || served[c] > served[best] {
			best = c
		}
	}
	return best
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
