// Package recipe is the hardened workload's timing, derived from what
// removes a terminating Pod's backend in each case: the one place the
// bundled fixtures (fixtures.Hardened) and the doctor's fixes (zerodrop
// doctor --fix, zerodrop test --prove-fix) both read, so they cannot
// disagree about the same fact.
//
// Four mechanisms stop new connections from reaching a Pod that is
// terminating, and each asks for its own numbers:
//
//   - EndpointRemoval (externalTrafficPolicy Cluster, any LB): the LB keeps
//     the node, whose check does not follow this Pod (kube-proxy's /healthz
//     or the traffic port), and kube-proxy on every node stops giving the
//     endpoint new connections once it sees it terminating: a terminating
//     endpoint is never ready, and with Cluster kube-proxy falls back to
//     serving-terminating endpoints only when no endpoint anywhere is ready
//     (kubernetes v1.37.2 pkg/proxy/topology.go CategorizeEndpoints). The
//     preStop covers that propagation: a few seconds (KubeProxyMargin).
//   - HealthCheck (Local behind a health-checked LB): the node's
//     healthCheckNodePort fails when its last local endpoint terminates
//     (it counts ready local endpoints: kubernetes v1.37.2
//     pkg/proxy/endpointschangetracker.go LocalReadyEndpoints), and the LB stops
//     sending the node new connections only after interval x
//     unhealthyThreshold; the Pod must keep serving that long plus the
//     margin (the rolling-update-local incident's "delay ... until the load
//     balancer health check has failed"). An LB whose default check goes
//     through the NodePort but lets the Service choose its check (gclb
//     and a GKE BackendConfig) gets this mechanism too: the recipe asks
//     for kube-proxy's check on the healthCheckNodePort (Recipe.LBCheck).
//   - TrafficCheck (Local behind an LB whose check goes through the
//     Service's NodePort and cannot be pointed elsewhere; gclb's default
//     instance-group check is one: ingress-gce
//     builds it from the serving port and path whatever the traffic
//     policy, kubernetes/ingress-gce pkg/healthchecks): kube-proxy gives
//     the check, like the traffic, to the node's terminating endpoint while
//     it serves (kubernetes v1.37.2 pkg/proxy/topology.go
//     CategorizeEndpoints), so the node's check fails only when the Pod
//     stops serving, and the LB keeps sending for interval x
//     unhealthyThreshold after that. The preStop keeps the node's check
//     passing until a rollout has put a new Pod there (Replaced); when the
//     node loses the workload for good (Leaves) no hook covers the lag, and
//     the recipe keeps kube-proxy's margin only.
//   - ServingCondition (Local behind an LB that follows the EndpointSlices'
//     serving condition, MetalLB L2): the node keeps the address while one
//     of its endpoints serves (metallb v0.15.2 internal/k8s/epslices
//     EndpointCanServe), so the app fails readiness on its signal and keeps
//     accepting until the probe has failed and the LB has moved.
//
// The numbers hold for Kubernetes 1.26 and later, where kube-proxy sends a
// terminating endpoint that still serves new connections when a node has
// no ready one (KEP-1669, on by default from 1.26, locked on from 1.28);
// before that no preStop helps a node's last endpoint with Local (the
// doctor's ZD002 says so, the suites' limits measure it).
package recipe

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// Mechanism is what removes a terminating Pod's backend.
type Mechanism string

const (
	// EndpointRemoval: kube-proxy on every node drops the endpoint; the LB
	// keeps the node (externalTrafficPolicy Cluster).
	EndpointRemoval Mechanism = "endpoint-removal"
	// HealthCheck: the LB's check of the node's healthCheckNodePort fails
	// and the LB moves after its lag (Local, health-checked LB).
	HealthCheck Mechanism = "lb-health-check"
	// TrafficCheck: the LB's check goes through the Service's NodePort,
	// reaches the terminating endpoint while it serves, and fails only when
	// the Pod stops serving (Local, gclb).
	TrafficCheck Mechanism = "lb-traffic-check"
	// ServingCondition: the LB follows the EndpointSlices' serving
	// condition (Local, MetalLB L2).
	ServingCondition Mechanism = "serving-condition"
	// TargetDeregistration: the LB's targets are the Pods themselves
	// (container-native load balancing); the vendor's controller
	// deregisters a terminating Pod's target, whatever the traffic policy.
	TargetDeregistration Mechanism = "target-deregistration"
	// OwnReadiness: nothing outside the Pod marks its endpoint
	// terminating (the kubelet's graceful node shutdown ends it without a
	// deletion), so the Pod's own failing readiness is what moves
	// kube-proxy and the LB.
	OwnReadiness Mechanism = "own-readiness"
)

// Fate is what a disruption does to the node of a terminating Pod, as far
// as the workload is concerned. It matters only where the LB cannot see a
// node's last endpoint terminate (TrafficCheck).
type Fate int

const (
	// Replaced: the disruption brings the workload back to the node (a
	// rollout's new Pods land on every node while the old ones terminate).
	Replaced Fate = iota
	// Leaves: the node loses the workload for good while the LB still
	// counts it (a drain, a scale-down, a drained pool).
	Leaves
	// ShutsDown: the node's machine shuts down and its kubelet ends the
	// Pod (graceful node shutdown) without deleting it, so nothing marks
	// its endpoint terminating: the endpoint stays ready and serving until
	// the Pod's own readiness fails or its exit is reported.
	ShutsDown
)

func (f Fate) String() string {
	switch f {
	case Leaves:
		return "leaves"
	case ShutsDown:
		return "shuts down"
	}
	return "replaced"
}

// Fixed parts of every hardened recipe.
const (
	// KubeProxyMargin is what every preStop adds for kube-proxy on every node
	// to see the terminating endpoint (its sync runs at most every
	// minSyncPeriod, 1 s by default: kubernetes v1.37.2
	// pkg/proxy/apis/config/v1alpha1/defaults.go; the rolling-update-local
	// incident's "small amount of additional time to allow kube-proxy to
	// observe the terminating Pod").
	KubeProxyMargin = 5 * time.Second
	// DeregistrationMargin is what a Pod target's preStop gives the
	// vendor's controller and LB to stop sending new requests after its
	// endpoint terminates. No vendor publishes that figure (AWS ELB docs,
	// "Deregistration delay": "the target may still receive connections due
	// to configuration propagation delay"; kubernetes/ingress-gce issue 1574:
	// NEG detach latency is "optimized", not configurable); zerodrop's cloud
	// LB reacts to the EndpointSlice within its reconcile. On a real cloud,
	// measure yours and lengthen the hook: users of AWS IP targets report
	// tens of seconds and more (aws-load-balancer-controller issues 1064,
	// 2106, 2366).
	DeregistrationMargin = 5 * time.Second
	// Drain is how long the app may take to finish what it is serving once
	// it lets go (ECHO_DRAIN_TIMEOUT of the bundled workload).
	Drain = 10 * time.Second
	// GraceSlack is added after preStop and drain so the kubelet's SIGKILL
	// never lands during the drain (the grace period includes the preStop).
	GraceSlack = 5 * time.Second
	// MinReadyFloor is the smallest hardened minReadySeconds: a new Pod has
	// to stay ready that long before a rollout moves on.
	MinReadyFloor = 5 * time.Second
	// ServingProbePeriod and ServingProbeFailureThreshold are the readiness
	// timing of an app that fails readiness before it stops accepting
	// (every Local recipe, readinessFirst): fast enough that kube-proxy and
	// an LB that follows the serving condition move within seconds of the
	// signal, three failures so one slow probe on a busy node does not.
	ServingProbePeriod           = time.Second
	ServingProbeFailureThreshold = 3
	// DefaultProbePeriod and DefaultProbeFailureThreshold are the API's
	// readiness defaults made explicit: where the app stays ready while it
	// drains, the probe's timing does not matter for termination.
	DefaultProbePeriod           = 10 * time.Second
	DefaultProbeFailureThreshold = 3
)

// LB is what a recipe needs to know of a load balancer: its lags for a
// Service with externalTrafficPolicy Local and whether it follows the
// serving condition instead of a health check. The doctor fills it from
// the LB profile it judged by (which a Service's annotations may have
// changed), the fixtures from a stock profile (FromProfile).
type LB struct {
	Name string
	// RemovalLag is how long the LB keeps sending new connections to a
	// node whose last local endpoint stopped serving (interval x
	// unhealthyThreshold).
	RemovalLag time.Duration
	// AdditionLag is how long before it sends to a node that started
	// serving (interval x healthyThreshold).
	AdditionLag    time.Duration
	FollowsServing bool
	// PodTargets: the LB sends to the Pods directly and checks each one
	// (profiles.Profile.PodBackends); AdditionLag is then how long a new
	// Pod waits for the LB's check to pass.
	PodTargets bool
	// ReadinessGate is the condition type of the vendor's pod readiness
	// gate for Pod targets ("" when it has none).
	ReadinessGate string
	// ChecksThroughNodePort: with Local the LB's check asks the Service's
	// NodePort (an L7 LB's instance-group check), so it passes while
	// kube-proxy still gives the node's connections to a terminating
	// endpoint that serves.
	ChecksThroughNodePort bool
	// BackendConfig: a Service may choose the LB's check (a GKE
	// BackendConfig), so a workload can point it at kube-proxy.
	BackendConfig bool
}

// FromProfile is the LB of a profile of clusters/lb/profiles.
func FromProfile(p profiles.Profile) LB {
	return LB{Name: p.Name, RemovalLag: p.RemovalLag(), AdditionLag: p.AdditionLag(), FollowsServing: p.FollowsServing(),
		PodTargets:            p.PodBackends(),
		ReadinessGate:         gateOf(p),
		ChecksThroughNodePort: p.HealthCheckFor(corev1.ServiceExternalTrafficPolicyLocal).Target == profiles.TargetNodePort,
		BackendConfig:         p.BackendConfig}
}

func gateOf(p profiles.Profile) string {
	if g := p.ReadinessGate(); g != nil {
		return g.ConditionType
	}
	return ""
}

// Recipe is the hardened timing of a workload behind one LB with one
// traffic policy.
type Recipe struct {
	Mechanism Mechanism
	// PreStop holds the termination signal back (a preStop sleep).
	PreStop time.Duration
	// UnreadyOnTerm: the app fails readiness when the signal arrives
	// (ServingCondition, and with Local after the hook: readinessFirst);
	// otherwise it stays ready while it drains.
	UnreadyOnTerm bool
	// ShutdownDelay is how long the app keeps accepting after the signal
	// before it drains (ECHO_SHUTDOWN_DELAY).
	ShutdownDelay time.Duration
	// Drain bounds the app's own graceful drain.
	Drain time.Duration
	// Grace is terminationGracePeriodSeconds: everything above plus
	// GraceSlack.
	Grace time.Duration
	// ReadinessPeriod and ReadinessFailureThreshold time the readiness
	// probe.
	ReadinessPeriod           time.Duration
	ReadinessFailureThreshold int32
	// MinReady is minReadySeconds: how long a new Pod stays ready before a
	// rollout moves on.
	MinReady time.Duration
	// ReadinessGate, when set, is the LB's pod readiness gate the Pods
	// name in spec.readinessGates: a Pod is Ready only once the LB calls
	// its target healthy, so a rollout and a drain's evictions (a PDB
	// counts Ready Pods) wait for the LB.
	ReadinessGate string
	// LBCheck, when set, is the check the workload asks its LB to run
	// instead of the LB's default (a GKE BackendConfig the Service names):
	// kube-proxy's answer on the Service's healthCheckNodePort
	// (profiles.KubeProxyCheck; its Port is that port, known once the
	// Service exists). The recipe's numbers hold only with it.
	LBCheck *profiles.HealthCheck
	// Why says, with its source, what the numbers cover.
	Why string
}

// LB is the profile p as a Service of this recipe sees it: with LBCheck,
// the check it asks for (on port, its healthCheckNodePort; 0 while the
// Service has none), for both policies.
func (r Recipe) LB(p profiles.Profile, port int) profiles.Profile {
	if r.LBCheck == nil {
		return p
	}
	h := *r.LBCheck
	h.Port = port
	return p.WithCheck(h)
}

// Hardened is the recipe for a workload behind lb with the given traffic
// policy ("" is Cluster, the API default) that a disruption may replace on
// its node (For with Replaced): what a workload's own manifest holds for
// every disruption, and what the doctor's fixes write.
func Hardened(lb LB, policy corev1.ServiceExternalTrafficPolicy) Recipe {
	return For(lb, policy, Replaced)
}

// For is the recipe for a workload behind lb with the given traffic policy
// in a disruption that does fate to a terminating Pod's node.
func For(lb LB, policy corev1.ServiceExternalTrafficPolicy, fate Fate) Recipe {
	r := Recipe{Drain: Drain}
	if fate == ShutsDown {
		return shutsDown(lb, policy)
	}
	switch {
	case lb.PodTargets:
		// Neither kube-proxy nor the node is on the path: the Pod's own
		// target leaves the LB when the vendor's controller deregisters it
		// (its endpoint terminates), and a new Pod takes traffic only once
		// the LB's check of it passed.
		r.Mechanism = TargetDeregistration
		r.PreStop = DeregistrationMargin
		r.ReadinessPeriod, r.ReadinessFailureThreshold = DefaultProbePeriod, DefaultProbeFailureThreshold
		r.MinReady = ceilSecond(max(lb.AdditionLag+DeregistrationMargin, MinReadyFloor))
		if lb.ReadinessGate != "" {
			// The gate holds the Pod unready until the LB's check passed:
			// a rollout waits for it with no guess at its lag, and so does
			// a drain, whose evictions a PDB paces by Ready Pods, which
			// minReadySeconds does not touch.
			r.ReadinessGate = lb.ReadinessGate
			r.MinReady = MinReadyFloor
		}
		r.Why = fmt.Sprintf("Pod targets behind %s (container-native load balancing): the LB sends to the Pod itself, so "+
			"the traffic policy and kube-proxy play no part; the vendor's controller deregisters the Pod's target when its "+
			"endpoint terminates (kubernetes/ingress-gce pkg/neg/types EndpointsDataFromEndpointSlices; "+
			"aws-load-balancer-controller pkg/backend/endpoint_resolver.go), and the app keeps accepting for the %s that "+
			"takes to reach the LB; a new Pod takes traffic only after the LB's check passed (%s), so a rollout waits "+
			"that before it moves on, or the Service's last healthy targets are gone while the new ones are still "+
			"being checked (the outage pod readiness gates exist for: aws-load-balancer-controller "+
			"docs/deploy/pod_readiness_gate.md)", lb.Name, DeregistrationMargin, lb.AdditionLag)
		if r.ReadinessGate != "" {
			r.Why += fmt.Sprintf("; the Pods name the LB's readiness gate %s, so a new Pod is Ready only once the LB's "+
				"check passed and a rollout and a drain's evictions (a PodDisruptionBudget counts Ready Pods, not "+
				"minReadySeconds) wait for it; the gate does not delay an old Pod's termination, so the preStop stays",
				r.ReadinessGate)
		}
	case policy != corev1.ServiceExternalTrafficPolicyLocal:
		// The LB's view of the node does not change when one of its Pods
		// terminates, and a new Pod's node is a backend already: only
		// kube-proxy has to move.
		r.Mechanism = EndpointRemoval
		r.PreStop = KubeProxyMargin
		r.ReadinessPeriod, r.ReadinessFailureThreshold = DefaultProbePeriod, DefaultProbeFailureThreshold
		r.MinReady = MinReadyFloor
		r.Why = "externalTrafficPolicy Cluster: the LB keeps the node (its check is kube-proxy's /healthz or the " +
			"traffic port, not this Pod), so what must happen before the app lets go is kube-proxy on every node " +
			"dropping the terminating endpoint (never ready, so Cluster gives it new connections only when no " +
			"endpoint anywhere is ready: kubernetes v1.37.2 pkg/proxy/topology.go CategorizeEndpoints); a new Pod's " +
			"node already takes traffic, so minReadySeconds needs no LB lag"
	case lb.FollowsServing:
		r.Mechanism = ServingCondition
		r.PreStop = ceilSecond(lb.RemovalLag + KubeProxyMargin)
		readinessFirst(&r, lb.RemovalLag)
		r.MinReady = ceilSecond(max(lb.AdditionLag, MinReadyFloor))
		r.Why = fmt.Sprintf("externalTrafficPolicy Local behind %s, which follows the EndpointSlices' serving "+
			"condition (metallb v0.15.2 internal/k8s/epslices.EndpointCanServe): the node keeps the address while "+
			"the terminating endpoint serves, so the app fails readiness on its signal and keeps accepting for "+
			"the probe's %s x %d, the LB's %s and the margin", lb.Name, ServingProbePeriod, ServingProbeFailureThreshold, lb.RemovalLag)
	case lb.ChecksThroughNodePort && lb.BackendConfig:
		// The Service points the LB's check at kube-proxy, which fails as
		// the last local endpoint starts terminating: the L4 LBs' mechanism
		// on the check's own timing, whatever the disruption does to the
		// node.
		hc := profiles.KubeProxyCheck()
		r.LBCheck = &hc
		healthChecked(&r, hc.DetectionTime(), hc.AdditionTime())
		r.Why = fmt.Sprintf("externalTrafficPolicy Local behind %s, whose default check goes through the Service's "+
			"NodePort and so passes while a terminating endpoint serves (kubernetes/ingress-gce pkg/healthchecks; KEP-1669): "+
			"the Service names a BackendConfig whose healthCheck.port is its healthCheckNodePort (ingress-gce "+
			"pkg/translator/healthchecks.go UpdateFromBackendConfig, USE_FIXED_PORT), with the timing GKE's L4 LBs give "+
			"that port (ingress-gce pkg/l4/healthchecks/healthchecksl4.go: %s x %d), so kube-proxy's answer fails when the "+
			"last local endpoint starts terminating (kubernetes v1.37.2 pkg/proxy/endpointschangetracker.go "+
			"LocalReadyEndpoints) and the LB moves %s later; the app stays ready through its hook, and a rollout waits "+
			"the check's addition lag %s before it moves on", lb.Name, hc.Interval.D(), hc.UnhealthyThreshold,
			hc.DetectionTime(), hc.AdditionTime())
	case lb.ChecksThroughNodePort:
		r.Mechanism = TrafficCheck
		r.MinReady = ceilSecond(max(lb.AdditionLag, MinReadyFloor))
		check := fmt.Sprintf("externalTrafficPolicy Local behind %s, whose check goes through the Service's NodePort "+
			"(ingress-gce builds an instance-group check from the serving port and path whatever the traffic policy, "+
			"kubernetes/ingress-gce pkg/healthchecks): kube-proxy gives it, like the traffic, to the node's terminating "+
			"endpoint while that serves (KEP-1669; kubernetes v1.37.2 pkg/proxy/topology.go CategorizeEndpoints), so "+
			"the node's check fails only when the Pod stops serving, and the LB keeps sending for its %s after that", lb.Name, lb.RemovalLag)
		if fate == Leaves {
			r.PreStop = KubeProxyMargin
			r.Why = check + "; when the node loses the workload for good (a drain, a scale-down, a drained pool) no " +
				"hook covers that lag, only a check that fails before the app stops serving (on GKE a BackendConfig " +
				"whose healthCheck.port is the Service's healthCheckNodePort, so the LB asks kube-proxy as other LBs " +
				"do: kubernetes/ingress-gce pkg/translator/healthchecks.go UpdateFromBackendConfig, USE_FIXED_PORT; " +
				"or container-native load balancing), so the hook is kube-proxy's margin and the LB's lag is a " +
				"platform limit here"
			break
		}
		r.PreStop = ceilSecond(lb.RemovalLag + KubeProxyMargin)
		r.Why = check + fmt.Sprintf("; the preStop keeps the node's check passing until a rollout has put a new Pod "+
			"on it, and a rollout waits the LB's addition lag %s before it moves on", lb.AdditionLag)
	default:
		healthChecked(&r, lb.RemovalLag, lb.AdditionLag)
		r.Why = fmt.Sprintf("externalTrafficPolicy Local behind %s: the node's healthCheckNodePort fails when its last "+
			"local endpoint terminates and the LB moves only after its health check's %s (the rolling-update-local "+
			"incident); the app stays ready through its hook, so kube-proxy keeps giving the node's new connections "+
			"to the terminating endpoint until then (KEP-1669), and a rollout waits the LB's addition lag %s "+
			"before it moves on", lb.Name, lb.RemovalLag, lb.AdditionLag)
	}
	if policy == corev1.ServiceExternalTrafficPolicyLocal && r.Mechanism != ServingCondition && r.Mechanism != TargetDeregistration {
		readinessFirst(&r, 0)
		r.Why += fmt.Sprintf("; after its hook the app fails readiness and keeps accepting for the probe's %s x %d and "+
			"kube-proxy's margin before it drains, because a node whose local endpoints are all terminating spreads new "+
			"connections over every one that still serves (kubernetes v1.37.2 pkg/proxy/topology.go CategorizeEndpoints), "+
			"and serving is the Pod's Ready condition (k8s.io/endpointslice v0.37.2 podToEndpoint)",
			ServingProbePeriod, ServingProbeFailureThreshold)
	}
	r.Grace = r.PreStop + r.ShutdownDelay + r.Drain + GraceSlack
	return r
}

// shutsDown is the recipe for a Pod whose node's machine shuts down. The
// kubelet's graceful node shutdown kills the node's Pods with its own grace
// period and does not delete them (kubernetes pkg/kubelet/nodeshutdown
// nodeshutdown_manager_linux.go), so no endpoint turns terminating. A
// preStop only spends the node's budget (shutdownGracePeriod minus
// shutdownGracePeriodCriticalPods) with the endpoint still ready, so there
// is none; the app fails readiness on its signal and keeps accepting for
// what would move the traffic if that failure were seen: the probe, then
// kube-proxy, with Local the LB's check of the node, for Pod targets the
// deregistration. Measured on this suite's kind cluster (v1.37.2), the
// kubelet did not report the failed readiness while its node shut down:
// each Pod left its endpoints 1-3 s after its exit, whatever it did before.
// So on a node's shutdown this recipe only keeps the app serving as long as
// the budget allows; no Pod setting makes the shutdown drop-free, which the
// suites record as a limit (the fix is draining the node first).
func shutsDown(lb LB, policy corev1.ServiceExternalTrafficPolicy) Recipe {
	r := Recipe{Mechanism: OwnReadiness, Drain: Drain, MinReady: MinReadyFloor}
	lag, what := time.Duration(0), "kube-proxy on every node drops an unready endpoint"
	switch {
	case lb.PodTargets:
		lag, what = DeregistrationMargin, "the vendor's controller deregisters the Pod's target"
	case policy == corev1.ServiceExternalTrafficPolicyLocal:
		lag, what = lb.RemovalLag, "the node's check fails once it has no ready local endpoint and the LB moves after its lag"
	}
	readinessFirst(&r, lag)
	r.Grace = r.ShutdownDelay + r.Drain + GraceSlack
	r.Why = fmt.Sprintf("the node's machine shuts down: the kubelet ends the Pod without deleting it, so its endpoint stays "+
		"ready (kubernetes pkg/kubelet/nodeshutdown); no preStop, which would spend the node's shutdown budget with the "+
		"endpoint still ready: the app fails readiness on its signal and keeps accepting for the probe's %s x %d, while "+
		"%s (%s), and kube-proxy's margin: %s, which the node's shutdownGracePeriod minus "+
		"shutdownGracePeriodCriticalPods must cover. Measured here, the kubelet did not report the failed readiness while "+
		"its node shut down (the endpoint went 1-3 s after the exit), so no recipe makes a shutdown drop-free: drain the "+
		"node first", ServingProbePeriod, ServingProbeFailureThreshold, what, lag, r.ShutdownDelay)
	return r
}

// readinessFirst makes a Local recipe's app, once its hook is over, fail
// readiness and keep accepting until kube-proxy has seen it, before it
// drains. A node whose local endpoints are all terminating (two Pods of a
// drained node, a rollout's old Pods on one node) gets new connections
// spread over every one of them that still serves (kubernetes v1.37.2
// pkg/proxy/topology.go CategorizeEndpoints), and an endpoint serves until
// the kubelet reports its Pod unready (serving is the Pod's Ready
// condition, which a terminating Pod keeps while its readiness probe
// passes: k8s.io/endpointslice v0.37.2 utils.go podToEndpoint). An app that
// stayed ready and stopped accepting after its hook would be sent
// connections it refuses, then, once it exits, connections to an address
// that is gone, until its exit reaches kube-proxy. The LB has no part in
// it: the node's check already failed when its last endpoint started
// terminating. Cluster needs none of it: there a terminating endpoint gets
// new connections only when no endpoint anywhere is ready.
//
// lag is how long the LB itself takes to follow the unready endpoint on top
// (ServingCondition: the LB moves on the serving condition, so the app
// keeps accepting for its lag too); 0 where the LB already moved.
func readinessFirst(r *Recipe, lag time.Duration) {
	r.UnreadyOnTerm = true
	r.ReadinessPeriod, r.ReadinessFailureThreshold = ServingProbePeriod, ServingProbeFailureThreshold
	r.ShutdownDelay = ceilSecond(ServingProbePeriod*ServingProbeFailureThreshold + lag + KubeProxyMargin)
}

// healthChecked sets r's numbers for a check of the node's
// healthCheckNodePort that drops it removal after its last local endpoint
// starts terminating and adds it addition after a new one is ready.
func healthChecked(r *Recipe, removal, addition time.Duration) {
	r.Mechanism = HealthCheck
	r.PreStop = ceilSecond(removal + KubeProxyMargin)
	r.MinReady = ceilSecond(max(addition, MinReadyFloor))
}

// Accepting is how long after termination begins the app still accepts
// new connections: what the recipe's mechanism needs covered.
func (r Recipe) Accepting() time.Duration { return r.PreStop + r.ShutdownDelay }

func ceilSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d
}
