package suites

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/harness/standin"
)

// Case is one cell of a scenario's matrix.
type Case struct {
	Policy    corev1.ServiceExternalTrafficPolicy
	Hardening fixtures.Hardening
	// KeepAlive is the client's and the server's keep-alive (unready-keepalive
	// varies it; every other scenario keeps it on).
	KeepAlive bool
	// Protocol is how the load's requests travel ("" or zdv1.ProtocolHTTP1:
	// HTTP/1.1; zdv1.ProtocolH2C: HTTP/2 streams on a kept-alive
	// connection, which a server ends with GOAWAY; zdv1.ProtocolGRPC and
	// zdv1.ProtocolGRPCStream: gRPC calls and server streams over it). The
	// Pods are the same whatever it is: the echo server speaks them all on
	// one port.
	Protocol string
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
	// deploys instead of the bundled one; Hardening is then OwnHardening and
	// Policy the user's Service's.
	StandIn *standin.StandIn
	// Only, when set, picks the LB models the case runs on (nil: every
	// model): the gate cases need an LB whose gate a workload may leave
	// out (gateCases).
	Only func(Model) bool
	// Hazard, when set, is what this documentation case is expected to
	// reproduce instead of its scenario's Hazard.
	Hazard string
	// Front, when set, puts a real proxy in front of the echo server as
	// the Pods the Service selects (fixtures.Front): the disruption meets
	// the proxy, whose shutdown the hardening sets.
	Front fixtures.Front
}

// OwnHardening names the cases of a user's own workload (zerodrop test), and
// OwnFixedHardening those of the same workload with the doctor's fixes
// (zerodrop test --prove-fix).
const (
	OwnHardening      fixtures.Hardening = "own"
	OwnFixedHardening fixtures.Hardening = "own-fixed"
)

// Name is the case's part of the spec name: "local/hardened", with its
// front, keep-alive and protocol after ("cluster/hardened/traefik").
func (c Case) Name() string {
	n := strings.ToLower(string(c.Policy)) + "/" + string(c.Hardening)
	if c.Front != "" {
		n += "/" + string(c.Front)
	}
	if !c.KeepAlive {
		n += "/no-keepalive"
	}
	if c.longLived() {
		n += "/" + c.Protocol
	}
	return n
}

// longLived says whether the case's load speaks a protocol whose
// connections outlive a request by design (HTTP/2, gRPC, WebSocket):
// keep-alive is no setting of theirs.
func (c Case) longLived() bool { return zdv1.ProtocolLongLived(c.Protocol) }

// Labels are the Ginkgo labels of the case (besides the scenario's).
func (c Case) Labels() []string {
	l := []string{"policy:" + strings.ToLower(string(c.Policy)), "profile:" + string(c.Hardening), "role:" + string(c.Role)}
	if !c.KeepAlive {
		l = append(l, "keepalive:off")
	}
	if c.longLived() {
		l = append(l, "protocol:"+c.Protocol)
	}
	if c.Front != "" {
		l = append(l, "front:"+string(c.Front))
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
// matrix's row (scenario, policy, profile, keep-alive, protocol) and column
// (lb).
func (c Cell) reportLabels(scenario string) map[string]string {
	l := map[string]string{
		"scenario": scenario, "policy": string(c.Policy), "profile": string(c.Hardening),
		"keepalive": fmt.Sprint(c.KeepAlive), "protocol": zdv1.ProtocolName(c.Protocol), "lb": c.Model.Name,
	}
	if c.Front != "" {
		l["front"] = string(c.Front)
	}
	return l
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
	// NeedsNodepools marks scenarios that add or remove nodepools or
	// nodes (the existing provider cannot).
	NeedsNodepools bool
	// Last picks the models whose cells come after every other model's
	// (nil: none), so the batches cut from them (Batches, in order) put
	// those columns in the last disruption: a departure without the
	// kubelet's grace puts kube-vip-bgp there, whose hold falls on every
	// cell of its batch, so that it shares the hold with as few columns as
	// the batch leaves room for, and the first columns (metallb's) with
	// none.
	Last func(Model) bool
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
	// NodeShutdown, when set, is the kubelet's graceful node shutdown on
	// the nodes the disruption shuts down (zero: off): the doctor's
	// prediction for a user's workload is judged for it (ZD025).
	NodeShutdown *recipe.ShutdownGrace
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
// cells of Policy ("" any) and Hardening ("" any) on the LB models On picks
// (nil: every model). The first that matches a cell decides it. Why names
// the mechanism that prevents the hazard, with its source.
type Prevention struct {
	Policy    corev1.ServiceExternalTrafficPolicy
	Hardening fixtures.Hardening
	On        func(Model) bool
	Why       string
	// Race: the mechanism narrows the hazard to a race the run does not
	// control, so one run may show it or not; such cells expect no outcome
	// (Why says what the race is and what was measured).
	Race bool
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
	var out []Case
	for _, c := range sc.Cases {
		if c.Only == nil || c.Only(m) {
			out = append(out, c)
		}
	}
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
func (sc Scenario) OwnCells(models []Model, profile fixtures.Hardening, own *standin.StandIn, expect func(Model) *zdv1.Expectation) []Cell {
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
		out = append(out, Cell{Case: Case{Policy: policy, Hardening: profile, KeepAlive: keepAlive, Role: zdv1.RoleDocumentation, StandIn: own},
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
// model, with its role and expected outcome there, model by model in the
// models' order, the Last ones last.
func (sc Scenario) Cells(models []Model) []Cell {
	var out []Cell
	for _, last := range []bool{false, true} {
		for _, m := range models {
			if (sc.Last != nil && sc.Last(m)) != last {
				continue
			}
			for _, c := range sc.CasesOn(m) {
				out = append(out, Cell{Case: c, Model: m, Expected: sc.expected(c, m)})
			}
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
// returned as it is: it compares the two. HTTP/2 cases leave: a request of
// theirs is a stream on a kept-alive connection, and has no form with a
// connection of its own.
func (sc Scenario) ConnectionPerRequest() Scenario {
	if slices.ContainsFunc(sc.Cases, func(c Case) bool { return !c.KeepAlive }) {
		return sc
	}
	sc.Cases = slices.DeleteFunc(slices.Clone(sc.Cases), Case.longLived)
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
	case c.Hazard != "" && (zdv1.ProtocolIsGRPC(c.Protocol) || c.Protocol == zdv1.ProtocolWebSocket || c.Front != ""):
		return &zdv1.Expectation{Why: c.Hazard}
	case zdv1.ProtocolIsGRPC(c.Protocol):
		return &zdv1.Expectation{Why: grpcPinnedRace}
	case c.Protocol == zdv1.ProtocolWebSocket:
		return &zdv1.Expectation{Why: wsCutRace}
	case c.longLived():
		return &zdv1.Expectation{Why: h2PinnedRace}
	}
	for _, e := range sc.Prevented {
		if (e.Policy == "" || e.Policy == c.Policy) && (e.Hardening == "" || e.Hardening == c.Hardening) && (e.On == nil || e.On(m)) {
			if e.Race {
				return &zdv1.Expectation{Why: e.Why}
			}
			return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardNotReproduced, Why: e.Why}
		}
	}
	if c.Hazard != "" {
		return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardReproduced, Why: c.Hazard}
	}
	return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardReproduced, Why: sc.Hazard}
}
