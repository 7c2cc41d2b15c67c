package suites

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/harness/standin"
)

// spec is the common start of every witness: the report's identity and the
// workload for the cell's policy, profile and LB model.
func (s *Suite) spec(sc Scenario, c Cell, extra ...fixtures.Option) scenario.Spec {
	name := sc.CellName(c)
	ns := dnsLabel("zd-" + strings.ReplaceAll(name, "/", "-"))
	opts := []fixtures.Option{
		fixtures.WithHardening(c.Hardening),
		fixtures.WithNamespace(ns),
		fixtures.WithPolicy(c.Policy),
		fixtures.WithLB(c.Model.Profile),
		fixtures.WithKeepAlive(c.KeepAlive),
		fixtures.WithKubernetes(s.Kubernetes),
		fixtures.WithFate(sc.Fate),
		fixtures.WithFront(c.Front),
	}
	var hooks scenario.LBHooks
	if c.Model.Cloud {
		// The cloud LB takes the Service by its class and applies the
		// profile its annotation names, whatever its own default.
		opts = append(opts, fixtures.WithLoadBalancerClass(contract.CloudLBClass), fixtures.WithLBProfile(c.Model.Name))
		hooks = s.CloudLB
	}
	if bgpModel(c.Model) {
		// MetalLB takes the classless Service; its pool annotation puts
		// it in BGP mode behind the router.
		opts = append(opts, fixtures.WithServiceAnnotation(contract.MetalLBPoolAnnotation, contract.MetalLBBGPPool))
		hooks = s.Router
	}
	if kubeVIPModel(c.Model) {
		// kube-vip takes the Services of its class; the address it
		// announces comes from the hooks (Prepare).
		opts = append(opts, fixtures.WithLoadBalancerClass(contract.KubeVIPClass))
		hooks = s.KubeVIP
	}
	if kubeVIPBGPModel(c.Model) {
		// The BGP kube-vip takes its own class, its address from the
		// hooks too, which follow its router's route.
		opts = append(opts, fixtures.WithLoadBalancerClass(contract.KubeVIPBGPClass))
		hooks = s.KubeVIPBGP
	}
	opts = append(opts, extra...)
	share := sc.OwnPods == "" && c.StandIn == nil
	if (kubeVIPModel(c.Model) || kubeVIPBGPModel(c.Model)) && !share && c.StandIn == nil {
		// kube-vip v0.9.2 serialises the leader elections of Services of
		// one name, whatever their namespace (pkg/manager/servicesLeader.go:
		// a process-wide lock per "kubevip-<name>", held while the election
		// runs; kube-vip/kube-vip#1201): a second "echo" gets no address
		// while the first exists. Witnesses run side by side, so each
		// names its Service after its cell.
		opts = append(opts, fixtures.WithServiceName(serviceName(c)))
	}
	if share {
		// The namespace and the Deployment are the Pod recipe's, the
		// Service is the cell's: every cell of the batch whose Pods come
		// out the same lands in one namespace over one Deployment.
		svc := serviceName(c)
		opts = append(opts, fixtures.WithServiceName(svc))
		if key, err := podsKey(opts); err == nil {
			ns = dnsLabel("zd-" + sc.Name + "-" + key)
		}
		opts = append(opts, fixtures.WithNamespace(ns))
	}
	var own *standin.StandIn
	if c.StandIn != nil {
		// A user's workload keeps its own knobs: the body's extra options
		// (replicas, pools, PDB) are the bundled workload's, not applied.
		opts = nil
		own = c.StandIn.In(ns)
		svc := own.ServiceObj
		svc.Spec.LoadBalancerClass = nil
		delete(svc.Annotations, contract.LBProfileAnnotation)
		if c.Model.Cloud {
			class := contract.CloudLBClass
			svc.Spec.LoadBalancerClass = &class
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[contract.LBProfileAnnotation] = c.Model.Name
			// The user's LB gate, as this model's LB sets it.
			own.GateFor(c.Model.Profile)
		}
	}
	// Documentation cells carry the assertion's criteria too: the hazard
	// they document is exactly a criterion that does not hold, which the
	// report then calls "hazard reproduced" rather than a failure.
	rate := s.Settings.rateOf(c.Case)
	crit := zdv1.Criteria{MinRequests: int64(float64(rate) * s.Timing.Baseline.Seconds()), MaxDropped: zdv1.Int64(0),
		ExplainWithinMs: zdv1.Float64(float64(explainWithin(lbOf(c)).Milliseconds())), LimitOpens: c.LimitOpens}
	ka := c.KeepAlive
	labels := c.reportLabels(sc.Name)
	labels["provider"] = s.Settings.Provider
	return scenario.Spec{
		ScenarioSpec: zdv1.ScenarioSpec{
			Name:          name,
			Role:          c.Role,
			Description:   sc.Description,
			Seeds:         sc.Seeds,
			PlatformLimit: c.PlatformLimit,
			Expected:      c.Expected,
			Labels:        labels,
			Criteria:      crit,
		},
		Workload:  opts,
		StandIn:   own,
		Rate:      rate,
		KeepAlive: &ka,
		Protocol:  c.Protocol,
		LB:        hooks,
		// A protocol cell's load is shaped as its protocol's clients
		// (grpcCases, wsCases).
		Shape:     load.MatrixShape(c.Protocol),
		SharePods: share,
	}
}

// explainWithin is how long before a failure window an event of the
// disruption may lie and still be its cause (Criteria.ExplainWithinMs):
// the LB model's longest lag to act on a node (its health checks), plus
// explainMargin for kube-proxy's sync, endpoint propagation and the
// workload's own delays.
func explainWithin(p profiles.Profile) time.Duration {
	return max(p.LongestRemovalLag(), p.AdditionLag()) + explainMargin
}

// lbOf is the LB as cell c's Service meets it: its model's profile, with
// the check its hardened recipe asks the LB for where the LB lets a
// Service choose one (harness/recipe Recipe.LBCheck: a GKE BackendConfig
// on gclb). That check does not depend on the disruption, so the
// workload's own recipe (Replaced) says it.
func lbOf(c Cell) profiles.Profile {
	p := c.Model.Profile
	if c.Hardening != fixtures.Hardened || c.StandIn != nil {
		return p
	}
	return recipe.Hardened(recipe.FromProfile(p), c.Policy).LB(p, 0)
}

// explainMargin covers what lies between a cause and its drops besides the
// LB: kube-proxy applies a change within its minSyncPeriod (1 s,
// k8s.io/kubernetes v1.37.2 pkg/proxy/apis/config/v1alpha1/defaults.go),
// EndpointSlices reach it in about a second, and a terminating Pod keeps
// answering through its preStop (5 s in the endpoint-removal recipe; the
// LB's lag is already counted for the others), its shutdown delay, its 5 s
// close grace and its drain budget before it stops (docs/recipes.md).
const explainMargin = 30 * time.Second

// serviceName is cell c's Service over shared Pods: its LB model, policy,
// profile and keep-alive ("gcp-nlb-local-hardened-noka"), a DNS-1035 label.
func serviceName(c Cell) string {
	n := c.Model.Name + "-" + string(c.Policy) + "-" + string(c.Hardening)
	if !c.KeepAlive {
		n += "-noka"
	}
	if c.longLived() {
		n += "-" + c.Protocol
	}
	if c.Front != "" {
		// kube-vip serialises Services of one name (above): the fronts'
		// Services must not share the echo cells' names.
		n += "-" + string(c.Front)
	}
	return dnsLabel(n)
}

// dnsLabel is s as a Kubernetes name (a namespace, a Service): lower case,
// what scenario.DirName keeps, no dash at either end, at most 63 bytes.
func dnsLabel(s string) string {
	n := strings.Trim(scenario.DirName(strings.ToLower(s)), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

// podsKey names the Pods opts build: a short hash of their Deployment and
// PodDisruptionBudget, so cells whose Pods come out the same (whatever
// their Service) get the same key.
func podsKey(opts []fixtures.Option) (string, error) {
	cfg, err := fixtures.NewConfig(append(slices.Clone(opts), fixtures.WithNamespace("x"))...)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal([]any{fixtures.BuildDeployment(cfg), fixtures.BuildPDB(cfg)})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:8], nil
}

// awaitLB keeps a witness's load running after the disruption while its LB
// acts on it: at most its LB model's longest removal lag, then a margin, so
// a late blackhole is measured too. An LB that reports its state ends the
// wait once it has nothing left to do (Run.AwaitLB).
func (s *Suite) awaitLB(ctx context.Context, c Cell, r *scenario.Run) error {
	lag := lbOf(c).LongestRemovalLag()
	if watch := s.Timing.HazardWatch; c.Role == zdv1.RoleDocumentation && lag > watch {
		r.Kube.Note("lb", fmt.Sprintf("settle: a documentation cell watches its LB for at most %s of its %s lag: "+
			"its hazard shows within it, and a failure window still open when the load stops is cut there, not "+
			"closed by the LB (the report marks it open at the end)", watch, lag))
		lag = watch
	}
	return r.AwaitLB(ctx, lag, s.Timing.SettleMargin)
}

// settleEach is awaitLB per witness, for Witnesses.Finish.
func (s *Suite) settleEach(cells []Cell) func(context.Context, int, *scenario.Run) error {
	return func(ctx context.Context, i int, r *scenario.Run) error { return s.awaitLB(ctx, cells[i], r) }
}

// settleFor is a fixed observation for every witness.
func settleFor(d time.Duration) func(context.Context, int, *scenario.Run) error {
	return func(ctx context.Context, _ int, r *scenario.Run) error { return r.Settle(ctx, d) }
}

// rolloutTimeout bounds a witness's rollout: the suite's wait plus each
// replica's minReadySeconds (an LB that adds a node slowly asks for a long
// one, see fixtures).
func (s *Suite) rolloutTimeout(r *scenario.Run) time.Duration {
	return s.Settings.ReadyTimeout + time.Duration(r.Target.Replicas)*time.Duration(r.Target.MinReadySeconds)*time.Second
}

// failEvery is the result of a scenario none of whose witnesses began.
func failEvery(cells []Cell, err error) []scenario.Result {
	out := make([]scenario.Result, len(cells))
	for i := range out {
		out[i].Err = err
	}
	return out
}

// abandon ends every witness still running with err (a shared step
// failed), keeping each one's evidence, and returns the results.
func (s *Suite) abandon(ctx context.Context, ws *scenario.Witnesses, err error) []scenario.Result {
	for _, i := range ws.Live() {
		ws.Fail(i, err)
	}
	return ws.Finish(ctx, nil)
}

// drainTimeout bounds a drain that every witness's pods must get through:
// the longest termination grace among them, plus the suite's own bound.
func (s *Suite) drainTimeout(ws *scenario.Witnesses, base time.Duration) time.Duration {
	longest := time.Duration(0)
	for _, i := range ws.Live() {
		r, _ := ws.Run(i)
		longest = max(longest, r.Target.Grace)
	}
	return longest + base
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
