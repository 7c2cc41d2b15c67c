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

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/harness/standin"
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
	Role zdv1.Role
	// Smoke puts the case in `make e2e-smoke`, which `make test` runs where
	// Docker can.
	Smoke bool
	// PlatformLimit is set by CasesOn when the LB under test cannot give
	// this case zero drops; the case then documents instead of asserting.
	// LimitOpens are the event types that open the limit's windows
	// (Mechanism.Opens of every limit that holds): the run's criteria ask
	// every window to be the limit's (Criteria.LimitOpens).
	PlatformLimit string
	LimitOpens    []string
	// StandIn, when set, is a user's workload (harness/standin) the case
	// deploys instead of the bundled one; Profile is then OwnProfile and
	// Policy the user's Service's.
	StandIn *standin.StandIn
}

// OwnProfile names the cases of a user's own workload (zerodrop test), and
// OwnFixedProfile those of the same workload with the doctor's fixes
// (zerodrop test --prove-fix).
const (
	OwnProfile      fixtures.Profile = "own"
	OwnFixedProfile fixtures.Profile = "own-fixed"
)

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

// Cell is one witness of a scenario: a case on one LB model, with the role
// and expectation it has there.
type Cell struct {
	Case
	Model Model
	// Expected is a documentation cell's expected outcome on its model.
	Expected *zdv1.Expectation
}

// Name is the cell's part of the spec name: "gcp-nlb/local/hardened".
func (c Cell) Name() string { return c.Model.Name + "/" + c.Case.Name() }

// CellName is the report's name of sc's cell c ("drain-node/metallb/local/hardened"):
// its witness's, its run directory's (scenario.DirName) and its JUnit line's.
func (sc Scenario) CellName(c Cell) string { return sc.Name + "/" + c.Name() }

// Labels are the Ginkgo labels of the cell (besides the scenario's).
func (c Cell) Labels() []string { return append(c.Case.Labels(), "lb:"+c.Model.Name) }

// reportLabels are the labels a cell's result carries in the report: the
// matrix's row (scenario, policy, profile, keep-alive) and column (lb).
func (c Cell) reportLabels(scenario string) map[string]string {
	return map[string]string{
		"scenario": scenario, "policy": string(c.Policy), "profile": string(c.Profile),
		"keepalive": fmt.Sprint(c.KeepAlive), "lb": c.Model.Name,
	}
}

// Body runs every cell of its scenario against one disruption (one witness
// per cell, harness/scenario.Witnesses) and returns their outcomes in the
// order of cells. It receives its scenario, so the identity (name,
// description, incidents) is written once, in the scenario's file. A
// witness's error means its run broke; a FAIL verdict is a scenario, not an
// error.
type Body func(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result

// Scenario is one incident reproduced on a cluster. Each scenario lives in
// its own file (scenario_*.go): its identity, its cases, where its hazard is
// expected and its body.
type Scenario struct {
	Name        string
	Description string
	// Seeds are the incidents the scenario reproduces (harness/incident,
	// told in docs/incidents.md).
	Seeds []string
	// Triggers are what the disruption does to a workload
	// (harness/incident): the doctor's findings predict drops for the
	// scenarios whose triggers their rules need.
	Triggers []incident.Trigger
	// Own marks the scenarios whose disruption applies to a user's
	// workload as written (zerodrop test): the body reads the workload
	// through Run.Target only and its extra fixtures options are not needed
	// for the disruption to meet the workload.
	Own bool
	// OwnTriggers are what the disruption does to a user's workload when
	// that differs from Triggers (nil: the same); see OwnTriggerSet.
	OwnTriggers []incident.Trigger
	// NeedsNodepools marks scenarios that add or remove nodepools (the
	// existing provider cannot).
	NeedsNodepools bool
	// Control marks the scenario that disrupts nothing and whose cells
	// are the controls of their columns (scenario_control.go): it cites no
	// incident and triggers nothing, and the suite carries each of its
	// outcomes into the later cells of the same column.
	Control bool
	// OwnPods, when set, says why each cell needs Pods of its own. Every
	// other scenario's cells share them: one Deployment per distinct Pod
	// recipe in a batch, with a Service and a load stream per cell
	// (scenario.Spec.SharePods), so a disruption costs one set of Pod
	// starts however many LB models and policies watch it.
	OwnPods string
	// Fate is what the disruption does to a terminating Pod's node
	// (harness/recipe): Leaves where the node loses the workload for good
	// (a drain, a scale-down, a drained pool). The hardened Pods and the
	// plan both follow it.
	Fate  recipe.Fate
	Cases []Case
	// Hazard is what the documentation cases reproduce, in a reader's
	// words.
	Hazard string
	// Prevented says where the hazard is expected not to reproduce, and why;
	// everywhere else a documentation cell is expected to reproduce it.
	Prevented []Prevention
	// Limits are platform behaviours, each found by measurement, that make
	// zero drops impossible for the scenario's hardened cases on one LB.
	Limits []Limit
	Body   Body
	// Cost estimates one cell's disruption and settling for the plan
	// (nil: an observation of Timing.Observe).
	Cost CellCost
}

// Prevention is where a scenario's hazard is not expected: the documentation
// cells of Policy ("" any) on the LB models On picks (nil: every model).
// The first that matches a cell decides it. Why names the mechanism that
// prevents the hazard, with its source.
type Prevention struct {
	Policy corev1.ServiceExternalTrafficPolicy
	On     func(Model) bool
	Why    string
}

// Limit turns a scenario's assertion cases with Policy into documentation
// when the suite runs on LB, with Reason in the report. It is data, reviewed
// like code: a limit must name the mechanism and the runs that showed it.
type Limit struct {
	// LB names the model the limit holds on; On, when set, picks the models
	// by what their profile does instead (every LB that behaves so).
	LB string
	On func(Model) bool
	// Proxy, when set, picks clusters by their kube-proxy instead, on every
	// model; such a limit is applied once the cluster answers
	// (Scenario.OnCluster, before the cells run), since its release is
	// known only then.
	Proxy func(KubeProxy) bool
	// NewConnections limits it to the cells whose load opens a connection
	// per request (ZERODROP_KEEPALIVE=off).
	NewConnections bool
	Policy         corev1.ServiceExternalTrafficPolicy
	Reason         Mechanism
}

// Mechanism is why a platform limit holds: the text the report shows
// (sources and the runs that measured it), and the event types that open
// its failure windows in a run (Criteria.LimitOpens), so a run of a limit
// cell checks that what dropped is the limit's, not the workload's.
type Mechanism struct {
	Text  string
	Opens []string
}

// limited is c documenting limit m besides any limit it already
// documents: the texts joined, the opening events of both.
func limited(c Case, m Mechanism) (Case, bool) {
	switch {
	case c.Role == zdv1.RoleAssertion:
		c.Role, c.PlatformLimit, c.LimitOpens = zdv1.RoleDocumentation, m.Text, slices.Clone(m.Opens)
	case c.PlatformLimit != "" && !strings.Contains(c.PlatformLimit, m.Text):
		c.PlatformLimit += " And: " + m.Text
		for _, o := range m.Opens {
			if !slices.Contains(c.LimitOpens, o) {
				c.LimitOpens = append(c.LimitOpens, o)
			}
		}
	default:
		return c, false
	}
	return c, true
}

// holds reports whether the limit applies on model m.
func (l Limit) holds(m Model) bool {
	return (l.LB != "" && l.LB == m.Name) || (l.On != nil && l.On(m))
}

// OnCluster is cells with the limits that depend on the cluster's
// kube-proxy applied: an assertion cell such a limit covers documents
// instead, expecting the hazard for the limit's reason. A cell another
// limit already made documentation (an LB model's) keeps that reason and
// gets this one too: on v1.25.4 drain-node behind MetalLB dropped 1,488
// requests for the kube-proxy's reason, not one for MetalLB's.
func (sc Scenario) OnCluster(cells []Cell, kp KubeProxy) []Cell {
	out := slices.Clone(cells)
	for i, c := range out {
		for _, l := range sc.Limits {
			if l.Proxy == nil || !l.Proxy(kp) || l.Policy != c.Policy || (l.NewConnections && c.KeepAlive) {
				continue
			}
			lc, ok := limited(c.Case, l.Reason)
			if !ok {
				continue
			}
			out[i].Case = lc
			out[i].Expected = sc.expected(out[i].Case, out[i].Model)
			c = out[i]
		}
	}
	return out
}

// CasesOn is the scenario's cases on one LB model: assertion cases that a
// Limit covers become documentation and carry its reason (every limit's
// that holds: azure-basic both resets an unhealthy node's flows and
// serves from one pool).
func (sc Scenario) CasesOn(m Model) []Case {
	out := append([]Case(nil), sc.Cases...)
	for i := range out {
		if out[i].Role != zdv1.RoleAssertion {
			continue
		}
		for _, l := range sc.Limits {
			if l.holds(m) && l.Policy == out[i].Policy {
				out[i], _ = limited(out[i], l.Reason)
			}
		}
	}
	return out
}

// OwnCells are the witnesses of a user's workload on the models: one
// documentation cell per model (the workload's own policy),
// each expecting what expect says for that model (the doctor's
// prediction), so a measurement that disagrees is flagged.
func (sc Scenario) OwnCells(models []Model, profile fixtures.Profile, own *standin.StandIn, expect func(Model) *zdv1.Expectation) []Cell {
	policy := own.ServiceObj.Spec.ExternalTrafficPolicy
	if policy == "" {
		policy = clusterPolicy
	}
	// A Pod's termination drops what is sent on new connections (the
	// doctor's ZD001/ZD002 are about them): a population of clients opens
	// them all the time, a load generator with a pool of keep-alive
	// connections almost never (measured: 0 dropped where the LB still
	// sent to a node with no endpoint for 8 s). So the load opens a
	// connection per request, except where reuse is the hazard (a readiness
	// flip).
	keepAlive := slices.Contains(sc.OwnTriggerSet(), incident.ReadinessFlip)
	var out []Cell
	for _, m := range models {
		out = append(out, Cell{Case: Case{Policy: policy, Profile: profile, KeepAlive: keepAlive, Role: zdv1.RoleDocumentation, StandIn: own},
			Model: m, Expected: expect(m)})
	}
	return out
}

// OwnTriggerSet is what the disruption does to a user's workload: what
// the doctor's prediction for it is read by.
func (sc Scenario) OwnTriggerSet() []incident.Trigger {
	if sc.OwnTriggers != nil {
		return sc.OwnTriggers
	}
	return sc.Triggers
}

// ownOnly reports whether every cell is a user's workload.
func ownOnly(cells []Cell) bool {
	for _, c := range cells {
		if c.StandIn == nil {
			return false
		}
	}
	return len(cells) > 0
}

// Cells is the scenario's witnesses on the models: every case on every
// model, with its role and expected outcome there.
func (sc Scenario) Cells(models []Model) []Cell {
	var out []Cell
	for _, m := range models {
		for _, c := range sc.CasesOn(m) {
			out = append(out, Cell{Case: c, Model: m, Expected: sc.expected(c, m)})
		}
	}
	return out
}

// ConnectionPerRequest is sc with the load opening a connection per
// request in every case that keeps connections alive
// (ZERODROP_KEEPALIVE=off). A pool of keep-alive connections almost never
// opens one while a node is leaving, so it cannot see what happens to a new
// connection then: with externalTrafficPolicy Local that is where
// kube-proxy's handling of terminating endpoints (KEP-1669) decides. The
// cases change before anything is derived from them, so roles, limits and
// expectations are those of the new cases; the limits stay, since their
// mechanisms act on every flow through the node, a request's own short
// connection included. A scenario that varies keep-alive itself is
// returned as it is: it compares the two.
func (sc Scenario) ConnectionPerRequest() Scenario {
	if slices.ContainsFunc(sc.Cases, func(c Case) bool { return !c.KeepAlive }) {
		return sc
	}
	sc.Cases = slices.Clone(sc.Cases)
	for i := range sc.Cases {
		sc.Cases[i].KeepAlive = false
	}
	return sc
}

func (sc Scenario) expected(c Case, m Model) *zdv1.Expectation {
	switch {
	case c.Role != zdv1.RoleDocumentation:
		return nil
	case c.PlatformLimit != "":
		// A measured limit: whether it shows in one run depends on timing
		// the workload does not control (see the reason).
		return &zdv1.Expectation{Why: c.PlatformLimit}
	}
	for _, e := range sc.Prevented {
		if (e.Policy == "" || e.Policy == c.Policy) && (e.On == nil || e.On(m)) {
			return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardNotReproduced, Why: e.Why}
		}
	}
	return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardReproduced, Why: sc.Hazard}
}

// noTerminatingEndpoints is why new connections are dropped where a node's
// endpoints are all terminating, on a kube-proxy without KEP-1669.
var noTerminatingEndpoints = Mechanism{Opens: []string{zdv1.EventEndpointTerminating}, Text: "kube-proxy here does not send new connections to endpoints that are terminating but " +
	"still serving (KEP-1669: feature gate ProxyTerminatingEndpoints, on by default from Kubernetes 1.26 and locked " +
	"on from 1.28; off before 1.26 or where it was turned off). With externalTrafficPolicy Local, a node whose " +
	"endpoints are all terminating then has none for a new connection (v1.27.4 pkg/proxy/topology.go " +
	"CategorizeEndpoints falls back to serving terminating endpoints only behind the gate), while the LB still sends " +
	"it there: a health-checked LB until its check of the node's healthCheckNodePort fails (that port counts ready " +
	"local endpoints only), MetalLB L2 while the node announces the VIP (it keeps a node whose endpoint is serving, " +
	"metallb v0.15.2 internal/k8s/epslices.EndpointCanServe). No Deployment setting helps: the preStop keeps the " +
	"Pod serving, but kube-proxy no longer sends it anything new. Measured on this suite's kind cluster, " +
	"Kubernetes v1.27.4 with ProxyTerminatingEndpoints=false, a connection per request at 200/s, 2026-11-24: " +
	"drain-node 1,438 (gcp-nlb) and 1,531 (metallb) timeouts in one window of 21.5 s and 7.7 s, scale-down 2,776 " +
	"and 1,261, drain-pool-with-pdb 2,826 and 255 (a second run: 1,484 and 1,571, 2,082 and 1,242, 2,570 and " +
	"1,566); with the gate on, 0 in each but drain-pool-with-pdb on metallb " +
	"(10, its own documented limit of a moving VIP). Kept-alive " +
	"connections hide it: the same cells with keep-alive dropped nothing on gcp-nlb with the gate off. Its windows open " +
	"when the node's last endpoint turns terminating (endpoint-terminating): kube-proxy drops it from new connections' " +
	"endpoints at once (the runs above predate this record of each window's opening event)"}

// metallbAnnouncerLeaves is why taking the endpoint of the node that
// announces the VIP (a drain of that node, a scale-down that takes its
// Pod) cannot be drop-free behind MetalLB L2 with Local, whatever the
// workload.
var metallbAnnouncerLeaves = Mechanism{Opens: []string{zdv1.EventEndpointStoppedServing}, Text: "MetalLB L2 with externalTrafficPolicy Local announces the VIP only from a node with a " +
	"serving endpoint (metallb v0.15.2 internal/k8s/epslices.EndpointCanServe, used by speaker/layer2_controller.go " +
	"ShouldAnnounce), and this suite aims its drains and scale-downs at that node. When the announcing node's last " +
	"endpoint stops serving (its drain, or a scale-down that takes its Pod), the VIP moves to another node, and the " +
	"TCP connections the client holds open through the old node reach a node with no conntrack entry for them: they " +
	"are reset. A request sent on one fails (Go's transport re-sends a GET on a new connection by itself, which the " +
	"suite counts as dropped). No Deployment setting keeps the client's connections off the old node. Measured on this " +
	"suite's kind cluster on 2026-11-23: drain-node/local/hardened 1 request, drain-pool-with-pdb/local/hardened 2 " +
	"(one per drained node), each reset within 30 ms of the endpoint's 'stopped serving', re-sent after 10-21 dead " +
	"pooled connections; earlier runs showed 0 only because the transport's retries were not counted. Its windows " +
	"open when the announcing node's last endpoint stops serving (endpoint-stopped-serving): drain-node on 2026-11-26 " +
	"(zerodrop 323bc8e), one GET re-sent 15 ms after it."}

// cordonDropsFlows picks the LB models that take a cordoned node out of
// their backends and close its established flows at once (gke-legacy).
func cordonDropsFlows(m Model) bool {
	f := m.Profile.Flows
	return m.Profile.Eligibility.ExcludeUnschedulable && f.OnRemoved == profiles.FlowClose && f.DrainTimeout.D() == 0
}

// cordonDropsFlowsReason is why a drain cannot be drop-free on such an LB,
// whatever the workload.
var cordonDropsFlowsReason = Mechanism{Opens: []string{zdv1.EventCordon, zdv1.EventLBBackendRemoved}, Text: "The LB takes a node out of its backends the moment it is cordoned (the service " +
	"controller of Kubernetes 1.18 and older: profile gke-legacy, eligibility.excludeUnschedulable, kubernetes PR 90823 " +
	"removed the rule in 1.19) and a target pool has no connection draining (flows.onRemoved close, closeAction drop): " +
	"the flows of the client's open keep-alive connections through that node are dropped at the cordon, before any " +
	"pod on it is evicted, and a request in flight on one times out. No Deployment or PDB setting runs before the " +
	"cordon. Measured on this suite's kind cluster on 2026-11-23: drain-node/gke-legacy/cluster/hardened and " +
	"local/hardened 1 timeout each, sent 101 ms and 20 ms after the LB removed the cordoned node; " +
	"drain-pool-with-pdb/gke-legacy/local/hardened 452 timeouts in the 2.3 s after the pool's cordon (with no eligible " +
	"node healthy the LB failed open to the new pool's nodes, which had no endpoint yet). Its windows open at the cordon " +
	"(cordon, and the LB's lb-backend-removed for the node that follows it within milliseconds): on 2026-11-26 (zerodrop " +
	"323bc8e) drain-node/gke-legacy/cluster/hardened 1 timeout sent 544 ms after the LB removed the cordoned node, " +
	"drain-pool-with-pdb/gke-legacy/local/hardened 616 timeouts from 45 ms after the second pool-a node's cordon."}

// unhealthyResetsFlows picks the L4 LB models that reset the established
// flows of a node whose health check fails (aws-nlb, azure-basic).
func unhealthyResetsFlows(m Model) bool {
	return m.Profile.Mode == profiles.ModeL4 && m.Profile.Flows.OnUnhealthy == profiles.FlowClose
}

// unhealthyResetsFlowsReason is why a node losing its last local endpoint
// cannot be drop-free on such an LB with Local, whatever the workload.
var unhealthyResetsFlowsReason = Mechanism{Opens: []string{zdv1.EventLBNodeUnhealthy}, Text: "The LB resets the established flows of a node whose health check fails (flows.onUnhealthy " +
	"close: AWS NLB docs, target-group-health-checks, \"the load balancer sends a TCP RST for packets received on the client " +
	"connections associated with the target\"; Azure Basic, \"all TCP flows expire\"). With externalTrafficPolicy Local the " +
	"node's check fails once its last local endpoint terminates, and the LB keeps sending the node new connections until " +
	"then, so some connection through it is always open when the reset comes: a request in flight on it is lost (Go's " +
	"transport re-sends a GET on a new connection, which the suite counts as dropped). The preStop keeps the Pod serving " +
	"through the lag, but no Deployment setting keeps the node healthy once its Pods leave. Measured on this suite's kind " +
	"cluster, 2026-11-26, 50 requests/s with keep-alive: drain-node/aws-nlb/local/hardened 1 request, scale-down on " +
	"aws-nlb and azure-basic 1 each, drain-pool-with-pdb on aws-nlb 2, nodepool-replacement on aws-nlb 1, each 41-79 ms " +
	"after the LB removed the node; a second run of the pool scenarios: 1 and 1 on aws-nlb. Its windows open at the " +
	"LB's lb-node-unhealthy for the node: on 2026-11-26 (zerodrop 323bc8e) 43-107 ms after it in every such cell " +
	"(aws-nlb drain-node, drain-pool-with-pdb twice, nodepool-replacement, scale-down; azure-basic drain-node)"}

// singlePool picks the LB models whose backend is one node pool.
func singlePool(m Model) bool { return m.Profile.Eligibility.DefaultPool != "" }

// singlePoolReplaced is why replacing the one pool a single-pool LB takes
// as its backend cannot be drop-free with Local, whatever the workload.
var singlePoolReplaced = Mechanism{Opens: []string{zdv1.EventLBNodeUnhealthy, zdv1.EventLBBackendRemoved}, Text: "The LB's backend is one node pool (azure-basic: the Basic SKU's backend pool is one " +
	"availability set or scale set, the nodepool-backend incident), and the pool replaced is that one: the new pool's nodes " +
	"never become backends, so once the old pool's Pods have moved to the new pool every backend's health check fails " +
	"(externalTrafficPolicy Local) and nothing is left to send to, until someone points the LB at the new pool. No " +
	"Deployment or PDB setting adds a backend. Measured on this suite's kind cluster, 2026-11-26: " +
	"drain-pool-with-pdb/azure-basic/local/hardened 5,048 timeouts in 101 s after the LB removed pool-a's second node, " +
	"the new pool-c node never added (a second run: 4,696 of 6,421); nodepool-replacement/azure-basic/local/hardened, its " +
	"Service pointed at pool-b, 3,334 of 5,688 once the workload had moved to pool-c. Its windows open when the LB " +
	"marks the pool's last node unhealthy and removes it (lb-node-unhealthy, lb-backend-removed): on 2026-11-26 " +
	"(zerodrop 323bc8e) drain-pool-with-pdb 5,037 timeouts from 44 ms after, nodepool-replacement 2,898 from 23 ms after"}

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
			Case{Policy: p, Profile: fixtures.Naive, KeepAlive: true, Role: zdv1.RoleDocumentation},
			Case{Policy: p, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion})
	}
	return out
}

// Scenarios is the registry, in the order the suite runs them: the order is
// a decision (the control first, so every later cell is judged against its
// column's; nodepool-replacement last, since it re-pools the cluster), so
// it is written here and nowhere else; everything else about a scenario is
// in its own file.
func Scenarios() []Scenario {
	return []Scenario{
		control(),
		rollingUpdate(),
		sourceIP(),
		distribution(),
		unreadyKeepalive(),
		drainNode(),
		scaleDown(),
		drainPoolWithPDB(),
		nodepoolReplacement(),
	}
}

// Timing is every wait and settle time of the scenario bodies, in one
// place.
type Timing struct {
	// Baseline is how long load runs before a disruption, so the run shows
	// the steady state first; a run needs at least Baseline x rate results.
	Baseline time.Duration
	// Observe is how long a scenario without a disruption (or after a
	// readiness flip) watches; ObserveShares is longer, for per-pod shares.
	Observe, ObserveShares time.Duration
	// SettleMargin is added to the LB's removal lag after a disruption, so a
	// late blackhole is measured too.
	SettleMargin time.Duration
	// NodeDrain bounds the drain of one node; PoolDrain that of a pool whose
	// PodDisruptionBudget may block it on purpose.
	NodeDrain, PoolDrain time.Duration
	// EndpointRemoval bounds the wait for an unready pod's endpoint to go.
	EndpointRemoval time.Duration
	// KubeProxyGrace is how long after an endpoint's removal a pod may still
	// be sent new requests: kube-proxy applies the change on every node
	// within about a second (its sync period).
	KubeProxyGrace time.Duration
	// Control is how long each control cell's load runs with nothing
	// disrupted (Settings.Control overrides).
	Control time.Duration
	// HazardWatch bounds how long a documentation cell waits for its LB
	// after the disruption: its hazard (a drop) shows within seconds of
	// the disruption, and an LB slower than this (gclb's default check,
	// 10 x 60 s) would otherwise hold its whole batch for the rest of its
	// lag. Assertion cells always wait their LB's whole lag, since a
	// late blackhole is exactly what they must not miss.
	HazardWatch time.Duration
}

// DefaultTiming is the suite's timing.
func DefaultTiming() Timing {
	return Timing{
		Baseline: 5 * time.Second, Observe: 15 * time.Second, ObserveShares: 20 * time.Second,
		SettleMargin: 5 * time.Second, NodeDrain: 3 * time.Minute, PoolDrain: 60 * time.Second,
		EndpointRemoval: time.Minute, KubeProxyGrace: 2 * time.Second,
		Control: time.Minute, HazardWatch: 2 * time.Minute,
	}
}

// spec is the common start of every witness: the report's identity and the
// workload for the cell's policy, profile and LB model.
func (s *Suite) spec(sc Scenario, c Cell, extra ...fixtures.Option) scenario.Spec {
	name := sc.CellName(c)
	ns := dnsLabel("zd-" + strings.ReplaceAll(name, "/", "-"))
	opts := []fixtures.Option{
		fixtures.WithProfile(c.Profile),
		fixtures.WithNamespace(ns),
		fixtures.WithPolicy(c.Policy),
		fixtures.WithLB(c.Model.Profile),
		fixtures.WithKeepAlive(c.KeepAlive),
		fixtures.WithKubernetes(s.Kubernetes),
		fixtures.WithFate(sc.Fate),
	}
	var hooks scenario.LBHooks
	if c.Model.Cloud {
		// The cloud LB takes the Service by its class and applies the
		// profile its annotation names, whatever its own default.
		opts = append(opts, fixtures.WithLoadBalancerClass(contract.CloudLBClass), fixtures.WithLBProfile(c.Model.Name))
		hooks = s.CloudLB
	}
	opts = append(opts, extra...)
	share := sc.OwnPods == "" && c.StandIn == nil
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
		}
	}
	// Documentation cells carry the assertion's criteria too: the hazard
	// they document is exactly a criterion that does not hold, which the
	// report then calls "hazard reproduced" rather than a failure.
	rate := s.Settings.RateFor(c.Role)
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
		LB:        hooks,
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
	if c.Profile != fixtures.Hardened || c.StandIn != nil {
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
	n := c.Model.Name + "-" + string(c.Policy) + "-" + string(c.Profile)
	if !c.KeepAlive {
		n += "-noka"
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
