package doctor

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/internal/kubeversion"
)

// Rule is one check, as data: what it looks for, which incidents (see
// docs/incidents.md) it comes from and how to fix what it finds. Severity is
// the highest severity the rule reports; some rules report lower ones
// depending on the traffic policy.
type Rule struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	Seeds    []string `json:"seeds"`
	// Triggers are what a disruption must do for the risk to drop
	// requests (empty: the rule predicts no drops, it informs).
	Triggers []incident.Trigger `json:"triggers,omitempty"`
	// Undecided: whether its hazard happens turns on what manifests do
	// not show (the app, its clients), so Report.Predict reads its finding
	// as a risk whatever its severity.
	Undecided   bool   `json:"undecided,omitempty"`
	Summary     string `json:"summary"`
	Description string `json:"description"`
	Fix         string `json:"fix"`

	check func(t *target) []result
	// container: the rule judges the serving container's own fields
	// (hooks, probes, environment), not the Pod template, the workload or
	// the Service; it is not run on a container written at admission.
	container bool
}

// result is what a check returns; Check turns it into a Finding.
type result struct {
	sev  Severity
	msg  string
	obj  *Object // nil: the workload
	line int     // 0: the object's line
	// fix replaces the rule's Fix where this object needs another (a
	// StatefulSet has no surge to suggest); "" keeps the rule's.
	fix string
}

// target is one (Service, workload) pair and everything the rules read.
type target struct {
	svcObj  *Object
	svc     *corev1.Service
	local   bool
	profile LBProfile
	l7Via   string // "ingress/ns/name", an HTTP or gRPC route, or the L7 profile, "" for none
	// l4Via is a TCPRoute or TLSRoute in front, udpVia a UDPRoute
	// (serviceView.l4Via).
	l4Via, udpVia string
	// podDirect: the front end reaches Pods without kube-proxy
	// (serviceView.podDirect).
	podDirect bool
	wl        *workload
	ci        int
	c         *corev1.Container
	pdbs      []*Object
	// kubeMinor is the Kubernetes minor version the rules judge for; 0
	// when not given (every supported release, >= 1.28).
	kubeMinor int
	// bcs finds a GKE BackendConfig of the input by namespace and name.
	bcs func(ns, name string) *Object
	// ns is the workload's Namespace when the input holds it (nil
	// otherwise): its labels may ask a vendor to inject its gate.
	ns *Object
	// shutdown is the nodes' graceful node shutdown when given
	// (WithNodeShutdown).
	shutdown *recipe.ShutdownGrace
}

// gated reports whether the Pods carry the LB's readiness gate: the
// template names it, or the vendor injects it there (into every Pod it
// targets, or into those of a namespace the input labels so).
func (t *target) gated() bool {
	g := t.profile.Profile.ReadinessGate()
	return g != nil && (g.InjectedIn(t.nsLabels()) || namesGate(t.wl.template, g.ConditionType))
}

func (t *target) nsLabels() map[string]string { return namespaceLabels(t.ns) }

// namespaceLabels are the labels of Namespace object o (nil for none).
func namespaceLabels(o *Object) map[string]string {
	if o == nil {
		return nil
	}
	return o.Obj.(*corev1.Namespace).Labels
}

// gateName is the LB's readiness gate as the user's Pods carry it: the
// template's own, the vendor's fixed name where it injects one into every
// Pod, else its domain (AWS names one per target group binding).
func (t *target) gateName() string {
	g := t.profile.Profile.ReadinessGate()
	if own := gateOfDomain(t.wl.template, g.ConditionType); own != "" {
		return own
	}
	if g.Injected == profiles.GateInjectedAlways {
		return g.ConditionType
	}
	domain, _, _ := strings.Cut(g.ConditionType, "/")
	return domain + "/<target group binding>"
}

// release is the Kubernetes release the rules judge for: the zero Version
// when none was given, which kubeversion counts as current.
func (t *target) release() kubeversion.Version {
	if t.kubeMinor == 0 {
		return kubeversion.Version{}
	}
	return kubeversion.Version{Major: 1, Minor: t.kubeMinor}
}

// kubeProxyTerminating: kube-proxy sends new connections to serving
// terminating endpoints when no ready one is left (KEP-1669;
// kubeversion.Version.ProxiesTerminatingByDefault).
func (t *target) kubeProxyTerminating() bool { return t.release().ProxiesTerminatingByDefault() }

func (t *target) cpath(rest ...any) []any {
	p := append(append([]any{}, tplPath...), "spec", "containers", t.ci)
	return append(p, rest...)
}

func (t *target) podPath(rest ...any) []any {
	return append(append(append([]any{}, tplPath...), "spec"), rest...)
}

func (t *target) line(paths ...[]any) int { return t.wl.obj.FirstLine(paths...) }

// Rules returns the rule catalogue in ID order.
func Rules() []Rule {
	out := make([]Rule, len(catalogue))
	copy(out, catalogue)
	return out
}

// RuleByID finds a rule.
func RuleByID(id string) (Rule, bool) {
	for _, r := range catalogue {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

var catalogue = []Rule{
	{
		ID: "ZD001", Name: "serving-ends-before-lb-moves", Severity: Error, Seeds: []string{incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "with Local, the endpoint can stop serving while the LB still sends its node new connections",
		Description: "With externalTrafficPolicy Local, when a node's last endpoint starts terminating kube-proxy's " +
			"healthCheckNodePort fails at once (it counts ready endpoints, and a terminating one is never ready), and " +
			"the LB stops sending the node new connections only after interval x unhealthyThreshold. Until then " +
			"kube-proxy gives those connections to the terminating endpoint only while it is serving, that is while " +
			"its readiness probe passes (KEP-1669; beta and on by default from Kubernetes 1.26, GA in 1.28). An app " +
			"that fails readiness when its termination signal arrives stops serving at the earliest signal + " +
			"period x (failureThreshold - 1); if that comes before the LB has moved while the app still accepts, " +
			"the node's new connections are dropped in between. Fires only for servers whose shutdown is known " +
			"(the ingress-nginx controller, whose health check fails on SIGTERM; Traefik, whose ping does; zerodrop's echo server); for others " +
			"ZD002 checks the preStop against the lag. Established TCP connections are not affected by readiness: " +
			"kube-proxy's drop rules match only new connections and its conntrack clean-up is UDP-only, so a longer " +
			"terminationGracePeriodSeconds never causes drops (the rolling-update-local incident's inequality, " +
			"preStop + period x (failureThreshold - 1) >= terminationGracePeriodSeconds, caps the grace period to " +
			"protect established connections that are not at risk; what its numbers must cover is the LB lag). " +
			"Not checked with an LB that follows the serving condition (MetalLB), where failing readiness early is " +
			"what moves the traffic, nor with Cluster policy, where a terminating endpoint gets new connections only " +
			"when no endpoint anywhere is ready.",
		Fix: "Keep the endpoint serving until the LB has moved: delay the termination signal with a preStop sleep of " +
			"at least the LB lag (for ingress-nginx, lifecycle.preStop.sleep instead of /wait-shutdown, as the " +
			"rolling-update-local incident does), or make readiness periodSeconds x (failureThreshold - 1) cover the " +
			"lag. Do not shorten terminationGracePeriodSeconds for it.",
		check:     checkServingWindow,
		container: true,
	},
	{
		ID: "ZD002", Name: "prestop-shorter-than-lb-lag", Severity: Error, Seeds: []string{incident.RollingUpdateLocal, incident.SourceIPDilemma},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "with Local, the Pod stops accepting new connections before the LB's health-check lag is over",
		Description: "With externalTrafficPolicy Local the LB picks nodes by kube-proxy's healthCheckNodePort, which " +
			"fails once the node's last endpoint terminates; the LB notices only after interval x unhealthyThreshold " +
			"and keeps sending new connections to the node until then. The Pod must keep serving that long " +
			"(incident rolling-update-local: \"delay ... until the load balancer health check has failed\"; incident source-ip-dilemma: blackholed traffic). " +
			"The lag comes from the LB profile (--lb-profile, the Service's zerodrop.dev/lb-profile annotation, " +
			"or the provider's health-check annotations). The Pod accepts for the preStop sleep, plus what a known " +
			"server keeps accepting after its signal (ingress-nginx's --shutdown-grace-period, Traefik's " +
			"requestAcceptGraceTimeout; HAProxy's SIGTERM is its hard stop, and a preStop's kill -USR1 its soft stop). Before Kubernetes " +
			"1.26 kube-proxy gave terminating endpoints no new connections at all (KEP-1669), so there the rule " +
			"fires whatever the hook.",
		Fix: "Add or lengthen a preStop sleep to at least the LB's interval x unhealthyThreshold plus a few " +
			"seconds for kube-proxy (lifecycle.preStop.sleep.seconds), and keep terminationGracePeriodSeconds above it.",
		check:     checkPreStopLag,
		container: true,
	},
	{
		ID: "ZD003", Name: "grace-not-above-prestop", Severity: Error, Seeds: []string{incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "terminationGracePeriodSeconds does not exceed the preStop hook",
		Description: "The kubelet counts the preStop hook against the grace period: when it is as long as the hook " +
			"the app receives SIGTERM with no time left to drain and is killed mid-request.",
		Fix:       "Set terminationGracePeriodSeconds to preStop + the app's drain time + a few seconds.",
		check:     checkGraceVsPreStop,
		container: true,
	},
	{
		ID: "ZD004", Name: "no-prestop", Severity: Warning, Seeds: []string{incident.SourceIPDilemma},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "with Cluster, no preStop hook delays the shutdown past endpoint removal",
		Description: "Endpoint removal reaches kube-proxy on every node asynchronously; an app that exits on SIGTERM " +
			"at once refuses connections that other nodes still forward to it (incident source-ip-dilemma lists a preStop sleep as " +
			"the first remediation). With Local, ZD002 covers this with the LB lag.",
		Fix:       "Add a preStop sleep of a few seconds (lifecycle.preStop.sleep.seconds: 5) and a grace period above it.",
		check:     checkNoPreStop,
		container: true,
	},
	{
		ID: "ZD005", Name: "prestop-duration-unknown", Severity: Warning, Seeds: []string{incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "the preStop hook's duration cannot be read, timing rules skipped",
		Description: "An exec hook without a recognisable `sleep N` (or a known controller's hook such as ingress-nginx's " +
			"/wait-shutdown), or an httpGet/tcpSocket hook, takes as long as the program behind it; ZD001 and ZD002 are " +
			"not evaluated. Behind externalTrafficPolicy Local it is a warning naming the LB lag the hook must cover; " +
			"with Cluster, information.",
		Fix:       "Prefer lifecycle.preStop.sleep, or check the hook's duration against ZD001/ZD002 by hand.",
		check:     checkPreStopUnknown,
		container: true,
	},
	{
		ID: "ZD006", Name: "zero-grace-period", Severity: Error, Seeds: []string{incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "terminationGracePeriodSeconds 0 kills Pods without a chance to drain",
		Description: "A grace period of 0 means \"stop immediately via the kill signal (no opportunity to shut down)\" " +
			"(k8s.io/api core/v1 PodSpec.terminationGracePeriodSeconds): no preStop runs to completion and every " +
			"request in flight on a Pod that a drain, rollout or scale-down removes is cut, while the LB and " +
			"kube-proxy still send it new ones.",
		Fix:   "Remove the field (default 30 s) or set it above the preStop hook plus the app's drain time.",
		check: checkZeroGrace,
	},
	{
		ID: "ZD007", Name: "lb-check-passes-while-terminating", Severity: Error, Seeds: []string{incident.DrainLocalPDB, incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "with Local, the LB checks nodes through the Service's NodePort, which a terminating Pod keeps passing",
		Description: "An L7 LB's instance-group check (gclb: ingress-gce builds it from the serving port and path, 60 s x 10 " +
			"by default, kubernetes/ingress-gce pkg/healthchecks) asks the Service's NodePort, and with externalTrafficPolicy " +
			"Local kube-proxy gives it, like the traffic, to the node's terminating endpoint while it serves (KEP-1669; " +
			"kubernetes v1.37.2 pkg/proxy/topology.go CategorizeEndpoints). The node's check fails only after the Pod exits, " +
			"and the LB keeps sending the node new connections for its whole lag after that, which kube-proxy drops: a preStop " +
			"only moves the moment, and a node that never gets a Pod back (a drain, a scale-down) is blackholed for the lag. " +
			"GKE lets the Service point the check elsewhere: a BackendConfig whose healthCheck.port is the Service's " +
			"healthCheckNodePort makes the LB ask kube-proxy, which fails as the node's last endpoint starts terminating, " +
			"as the L4 LBs' checks do (ingress-gce pkg/translator/healthchecks.go UpdateFromBackendConfig, USE_FIXED_PORT).",
		Fix: "Pin spec.healthCheckNodePort, name a BackendConfig (annotation cloud.google.com/backend-config: " +
			"{\"default\": NAME}) whose spec.healthCheck asks that port (path /healthz, the timing of GKE's L4 checks: " +
			"3 s x 2, `zerodrop doctor --list-recipes`), and give the Pods the recipe's preStop; or use container-native " +
			"load balancing.",
		check: checkThroughNodePort,
	},
	{
		ID: "ZD010", Name: "local-without-spread", Severity: Warning, Seeds: []string{incident.NodepoolBackend},
		Triggers: []incident.Trigger{incident.Placement, incident.Eviction},
		Summary:  "with Local, replicas can all sit on few nodes",
		Description: "With externalTrafficPolicy Local the LB balances per node, not per Pod: Pods sharing a node " +
			"share its slice, and one node drain can take every endpoint (incident nodepool-backend: 100/0/0). Nothing here spreads " +
			"the replicas (no topologySpreadConstraints on kubernetes.io/hostname or a zone, no podAntiAffinity).",
		Fix: "Add a topologySpreadConstraint (topologyKey kubernetes.io/hostname, maxSkew 1, nodeTaintsPolicy Honor) " +
			"or a podAntiAffinity on kubernetes.io/hostname.",
		check: checkSpread,
	},
	{
		ID: "ZD011", Name: "pool-affinity-vs-lb-backend", Severity: Error, Seeds: []string{incident.NodepoolBackend},
		Triggers: []incident.Trigger{incident.Placement},
		Summary:  "with Local, the Pods' node pool and the LB's backend pool may not match",
		Description: "The nodepool-backend incident (docs/incidents.md): an LB whose backend is one node pool (AKS Basic) only reaches Pods on that pool; with " +
			"Local, Pods elsewhere get no traffic and those in the pool get all of it. Error when the Service pins " +
			"the LB to a pool the Pods are not confined to; warning (info on LBs that take every node) when the Pods " +
			"are pinned to a pool and nothing pins the LB.",
		Fix: "Pin both: required node affinity on the pool label for the Pods and the LB's pool annotation " +
			"(zerodrop.dev/lb-pool, service.beta.kubernetes.io/azure-load-balancer-mode, or " +
			"aws-load-balancer-target-node-labels) naming the same pool; or use Cluster.",
		check: checkPools,
	},
	{
		ID: "ZD012", Name: "single-replica", Severity: Warning, Seeds: []string{incident.DrainLocalPDB, incident.SourceIPDilemma},
		Triggers: []incident.Trigger{incident.PodTermination},
		Summary:  "one replica: any eviction or node replacement leaves no endpoint",
		Description: "With one replica a drain, a node-pool replacement or an eviction removes the only endpoint " +
			"until the replacement is ready; a PDB cannot help (it would block the drain instead).",
		Fix:   "Run at least 2 replicas (3 to survive a drain during a rollout), spread over nodes.",
		check: checkSingleReplica,
	},
	{
		ID: "ZD013", Name: "spread-counts-tainted-nodes", Severity: Warning, Seeds: []string{incident.RollingUpdateLocal, incident.DrainLocalPDB},
		Triggers: []incident.Trigger{incident.Rollout, incident.Eviction},
		Summary:  "a DoNotSchedule spread counts nodes the Pods cannot use (tainted, cordoned), so new Pods can stay Pending",
		Description: "The scheduler counts every node the Pod's node affinity admits as a topology domain, tainted or cordoned, " +
			"unless the constraint says nodeTaintsPolicy: Honor: a constraint without it is Ignore (k8s.io/kubernetes v1.37.2 " +
			"pkg/scheduler/framework/plugins/podtopologyspread/common.go, filterTopologySpreadConstraints), and before 1.26 " +
			"the field does not exist for the scheduler (NodeInclusionPolicyInPodTopologySpread is alpha and off in 1.25, beta " +
			"and on from 1.26; the API server drops the field while it is off). A control-plane node, a tainted pool or a node " +
			"being drained is then an empty domain that holds the minimum at 0: with DoNotSchedule, once each node that takes " +
			"the Pods holds maxSkew of them, a rollout's surge Pod or a drained node's Pod fits nowhere and stays Pending " +
			"(measured on v1.25.4: \"didn't match pod topology spread constraints\"; on v1.37.2, 3 replicas with maxSurge 1 " +
			"and maxUnavailable 0 over 3 workers and a tainted control plane: the surge Pod never scheduled). Quiet when the " +
			"Pods tolerate every taint.",
		Fix: "Set nodeTaintsPolicy: Honor on the constraint (from 1.26; the fixed copy zerodrop test measures does); before 1.26 " +
			"use whenUnsatisfiable: ScheduleAnyway, or upgrade.",
		check: checkSpreadCountsTainted,
	},
	{
		ID: "ZD020", Name: "pdb-never-allows-eviction", Severity: Error, Seeds: []string{incident.DrainLocalPDB},
		Triggers: []incident.Trigger{incident.Eviction},
		Summary:  "a PodDisruptionBudget can never allow an eviction",
		Description: "maxUnavailable 0, or minAvailable equal to the replicas (or 100%), blocks every eviction: " +
			"kubectl drain stalls forever. The drain-local-pdb incident (docs/incidents.md): the drain stalled on such a budget while the service controller " +
			"had already removed the cordoned nodes from the LB, and with Local all traffic was blackholed.",
		Fix: "Allow at least one disruption (maxUnavailable: 1) or delete a budget you do not need (the drain-local-pdb incident's came " +
			"from a Helm chart default).",
		check: checkPDBNever,
	},
	{
		ID: "ZD021", Name: "pdb-overlap", Severity: Error, Seeds: []string{incident.DrainLocalPDB},
		Triggers: []incident.Trigger{incident.Eviction},
		Summary:  "more than one PodDisruptionBudget selects the same Pods",
		Description: "The eviction API refuses to evict a Pod covered by more than one budget, so a drain stalls " +
			"on it exactly as in incident drain-local-pdb.",
		Fix:   "Keep one PodDisruptionBudget per set of Pods.",
		check: checkPDBOverlap,
	},
	{
		ID: "ZD022", Name: "pdb-blocks-unhealthy-eviction", Severity: Warning, Seeds: []string{incident.DrainLocalPDB},
		Triggers: []incident.Trigger{incident.Eviction},
		Summary:  "a PodDisruptionBudget lets an unready Pod stall a drain",
		Description: "Without unhealthyPodEvictionPolicy AlwaysAllow, a Running but not Ready Pod can only be " +
			"evicted while the budget is satisfied; a crash-looping replica then stalls the drain of its node.",
		Fix:   "Set spec.unhealthyPodEvictionPolicy: AlwaysAllow.",
		check: checkPDBUnhealthy,
	},
	{
		ID: "ZD023", Name: "no-pdb", Severity: Info, Seeds: []string{incident.DrainLocalPDB},
		Triggers: []incident.Trigger{incident.Eviction},
		Summary:  "no PodDisruptionBudget: draining several nodes at once can evict every replica",
		Description: "kubectl drain of several nodes (incident drain-local-pdb: \"don't drain all nodes at once\") evicts without " +
			"limit when no budget covers the Pods.",
		Fix:   "Add a PodDisruptionBudget with maxUnavailable: 1 and unhealthyPodEvictionPolicy: AlwaysAllow.",
		check: checkNoPDB,
	},
	{
		ID: "ZD024", Name: "pool-drain-outpaces-lb", Severity: Error, Seeds: []string{incident.DrainLocalPDB},
		Triggers: []incident.Trigger{incident.PoolDrain},
		Summary:  "with Local and nothing limiting evictions, a pool drain leaves the LB no healthy node for a while",
		Description: "A pool drain (a node pool upgrade or replacement) evicts every replica there at once when no " +
			"PodDisruptionBudget limits it. Their nodes leave the LB once their endpoints are only terminating " +
			"(interval x unhealthyThreshold after the eviction: kube-proxy's health check counts ready endpoints, " +
			"KEP-1669), while the nodes the new Pods start on join only once the Pods are ready and the LB has " +
			"checked them healthy (interval x healthyThreshold). When the second outlasts the first, no node the LB " +
			"sends to has a ready endpoint. Measured: ingress-nginx's AWS manifest with the doctor's other fixes, " +
			"pool replacement behind aws-nlb, 358 timeouts in 10 s with no healthy backend.",
		Fix: "Add a PodDisruptionBudget with maxUnavailable: 1 and unhealthyPodEvictionPolicy: AlwaysAllow, so the " +
			"drain evicts one Pod at a time and the cordoned nodes of the others stay healthy backends; where the " +
			"LB offers it, a readiness gate on the LB's own target health (the AWS Load Balancer Controller's pod " +
			"readiness gate, GKE's NEG readiness gate) so a new Pod counts as ready only once the LB sends to it.",
		check: checkPoolDrain,
	},
	{
		ID: "ZD025", Name: "node-shutdown-outruns-lb", Severity: Error, Seeds: []string{incident.GracefulNodeShutdown, incident.SpotInterruption},
		Triggers: []incident.Trigger{incident.NodeShutdown},
		Summary:  "a node's shutdown kills the Pod before its own shutdown is over, as a ready endpoint",
		Description: "When a node's machine shuts down with the Pod on it (a reboot, a preemption, a spot interruption " +
			"nothing drained first), the kubelet's graceful node shutdown kills the node's regular Pods with " +
			"shutdownGracePeriod minus shutdownGracePeriodCriticalPods as their grace period, without deleting them " +
			"(kubernetes pkg/kubelet/nodeshutdown nodeshutdown_manager_linux.go); with the feature off, the kubelet's " +
			"default, the kubelet stops with the machine and neither runs a preStop nor reports an exit. No endpoint " +
			"turns terminating: measured on this suite's kind cluster (v1.37.2, 30 s with 15 s for critical Pods), each " +
			"Pod left its endpoints only 1-3 s after its container exited, even one that failed readiness on SIGTERM, " +
			"so the LB and kube-proxy sent it connections that were refused (kubernetes/kubernetes#116965 and #106879, open; " +
			"#105780: readiness probes stop during the shutdown). A preStop sleep runs with the endpoint " +
			"still ready and, when as long as the budget, ends with the kubelet's kill (GKE gives regular Pods 15 s on a " +
			"preemption and says a longer terminationGracePeriodSeconds has no effect: GKE docs, preemptible VMs); measured: a 29 s preStop behind gcp-nlb (Local), killed at 15 s, a connection " +
			"refused 2 s later. Needs the nodes' setting: --node-shutdown-grace. A Pod that fits the budget is still " +
			"sent connections after its exit: no Pod setting makes a shutdown drop-free (docs/incidents.md, node-shutdown).",
		Fix: "Drain nodes before their machines shut down: a termination handler that cordons, labels " +
			"node.kubernetes.io/exclude-from-external-load-balancers and drains on the cloud's notice " +
			"(aws-node-termination-handler), kubectl drain before a planned reboot; the Pods then leave by eviction, " +
			"as a terminating endpoint the LB and kube-proxy follow. Keep the Pod's shutdown (preStop and drain) within " +
			"shutdownGracePeriod minus shutdownGracePeriodCriticalPods, or lengthen the nodes' period.",
		check:     checkShutdownBudget,
		container: true,
	},
	{
		ID: "ZD026", Name: "lb-check-misses-scale-down", Severity: Warning, Seeds: []string{incident.Consolidation},
		Triggers: []incident.Trigger{incident.NodeRemoval},
		Summary:  "with Cluster, the LB's check keeps passing on a node the cluster autoscaler is removing",
		Description: "The cluster autoscaler removes a node by tainting it ToBeDeletedByClusterAutoscaler, draining it and " +
			"deleting its machine; it does not label it node.kubernetes.io/exclude-from-external-load-balancers " +
			"(kubernetes/autoscaler cluster-autoscaler-1.35.0 core/scaledown/actuation), and from Kubernetes 1.27 the " +
			"service controller re-syncs the LBs for that label, not for the taint (k8s.io/cloud-provider controllers/service " +
			"shouldSyncUpdatedNode). What takes the node out in time is kube-proxy: its node-wide :10256/healthz fails on " +
			"the taint (kubernetes v1.37.2 pkg/proxy/healthcheck/proxy_health.go NodeEligible; KEP-3836, GA in 1.31), which " +
			"an LB that checks kube-proxy sees. For externalTrafficPolicy Cluster some LBs check the Service's own port " +
			"instead (AWS NLB instance targets: TCP to the traffic port, cloud-provider-aws buildNLBHealthCheckConfiguration; " +
			"Azure's per-port probe on the NodePort; GKE Ingress: the NodePort's serving path), which kube-proxy keeps " +
			"answering with the other nodes' Pods, so the emptied node stays a backend until its Node is deleted. " +
			"Measured (consolidation-autoscaler, Cluster, hardened workload, Kubernetes v1.37.2): aws-nlb 1, azure-lb 2, gclb " +
			"46 timeouts from the machine's shutdown; gcp-nlb, whose check asks kube-proxy, 0. A warning: whether the " +
			"cluster autoscaler removes nodes under the workload is not in the manifests.",
		Fix: "Point the LB's check at kube-proxy where the vendor lets you (AWS: aws-load-balancer-healthcheck-port \"10256\", " +
			"-protocol http, -path /healthz; AKS: clusterServiceLoadBalancerHealthProbeMode Shared; GKE Ingress: a BackendConfig " +
			"healthCheck on port 10256, requestPath /healthz), use externalTrafficPolicy Local, or remove nodes with a tool that " +
			"labels them out of the LBs before draining (Karpenter).",
		check: checkScaleDownUnseen,
	},
	{
		ID: "ZD030", Name: "no-readiness-probe", Severity: Error, Seeds: []string{incident.RollingUpdateLocal, incident.KeepaliveUnready},
		Triggers: []incident.Trigger{incident.Rollout, incident.Eviction},
		Summary:  "the serving container has no readiness probe",
		Description: "Without a readiness probe a Pod is an endpoint as soon as its container starts, before it " +
			"listens, and stays one while it cannot serve; the LB and kube-proxy send it traffic it drops. Behind an LB " +
			"that targets Pods and checks each one before it sends (ALB or NLB IP targets, GKE NEGs) it is an info: " +
			"the LB's own check keeps a Pod that does not listen yet out, and the rollout's race is ZD033's.",
		Fix:       "Add a readinessProbe on an endpoint that fails while the app cannot serve (and while it drains, if it should).",
		check:     checkNoReadiness,
		container: true,
	},
	{
		ID: "ZD031", Name: "readiness-equals-liveness", Severity: Warning, Seeds: []string{incident.RollingUpdateLocal, incident.KeepaliveUnready},
		Triggers: []incident.Trigger{incident.ReadinessFlip},
		Summary:  "the readiness probe checks the same thing as the liveness probe, which gives up no later",
		Description: "When both probes hit the same handler and liveness fails no later than readiness (period x " +
			"failureThreshold), a Pod cannot be unready without also being restarted: an overloaded or draining Pod is " +
			"killed instead of taken out of rotation. Quiet when liveness gives up later, the pattern Kubernetes' probe " +
			"guide recommends.",
		Fix: "Give readiness its own endpoint (/readyz) that reflects whether the app should receive traffic, or give " +
			"liveness a higher failureThreshold than readiness.",
		check:     checkReadinessLiveness,
		container: true,
	},
	{
		ID: "ZD032", Name: "rollout-allows-zero-ready", Severity: Error, Seeds: []string{incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.Rollout},
		Summary:  "the rollout strategy can take every endpoint down",
		Description: "A Recreate strategy, or a maxUnavailable that rounds to the replica count (a StatefulSet with " +
			"one replica), stops all Pods before new ones are ready. A DaemonSet with maxSurge 0 replaces each node's " +
			"only endpoint with nothing in between, which with Local is the LB lag window of incident source-ip-dilemma on every node.",
		Fix: "Use a surge rollout: RollingUpdate with maxUnavailable 0 and maxSurge 1 (incident rolling-update-local: \"surge updates\"); " +
			"for a DaemonSet maxSurge 1, maxUnavailable 0.",
		check: checkRollout,
	},
	{
		ID: "ZD033", Name: "local-without-min-ready", Severity: Warning, Seeds: []string{incident.RollingUpdateLocal},
		Triggers: []incident.Trigger{incident.Rollout},
		Summary:  "with Local, or behind Pod targets, minReadySeconds is 0",
		Description: "A rollout moves on as soon as a new Pod is ready, before the LB has health-checked its node " +
			"into the backend set (interval x healthyThreshold); old Pods can go before the new node takes traffic. " +
			"GKE recommends minReadySeconds (incident rolling-update-local). Behind Pod targets (GKE NEG, AWS IP " +
			"targets) the LB checks the new Pod itself, whatever the traffic policy, and deregisters each old Pod as it " +
			"terminates: the same race, which a pod readiness gate also closes (aws-load-balancer-controller " +
			"docs/deploy/pod_readiness_gate.md).",
		Fix: "Set minReadySeconds to at least the LB's interval x healthyThreshold; behind Pod targets, name the LB's " +
			"pod readiness gate instead (AWS: label the namespace elbv2.k8s.aws/pod-readiness-gate-inject: enabled; " +
			"GKE injects cloud.google.com/load-balancer-neg-ready), which also holds a drain's evictions.",
		check: checkMinReady,
	},
	{
		ID: "ZD040", Name: "keepalive-behind-l7", Severity: Warning, Seeds: []string{incident.KeepaliveUnready},
		Triggers: []incident.Trigger{incident.ReadinessFlip},
		Summary:  "keep-alive behind an L7 load balancer while readiness can flip",
		Description: "The keepalive-unready incident (docs/incidents.md): an L7 front end (GCE Ingress) kept keep-alive connections to the nodes open and " +
			"reused them; NAT rules apply only to new connections, so a Pod that turned unready kept receiving " +
			"requests. The readiness probe here differs from liveness (the Pod can be unready while alive) and " +
			"nothing turns keep-alive off.",
		Fix: "Use container-native load balancing (NEG: the LB talks to Pod IPs and health-checks them), or have the " +
			"app close keep-alive connections (Connection: close) once it is unready or draining, or drop the " +
			"keep-alive header (the keepalive-unready incident's workaround; ECHO_KEEPALIVE=false for the echo server).",
		check:     checkKeepAlive,
		container: true,
	},
	{
		ID: "ZD041", Name: "keepalive-reaches-unready", Severity: Info, Seeds: []string{incident.KeepaliveUnready},
		Triggers: []incident.Trigger{incident.ReadinessFlip}, Undecided: true,
		Summary: "a Pod that turns unready keeps answering the keep-alive connections clients already opened",
		Description: "Behind an L4 load balancer the client's own TCP connection reaches the node, and kube-proxy's NAT " +
			"picks the Pod when the connection starts: removing an unready Pod's endpoint changes where new connections " +
			"go, not the open ones (kube-proxy clears conntrack entries of UDP Services only: kubernetes " +
			"pkg/proxy/conntrack/cleanup.go, CleanStaleEntries). A client that reuses a keep-alive connection goes on " +
			"reaching the unready Pod until the app or the client closes it; whether that hurts depends on why the Pod " +
			"is unready, which the manifests do not say. Measured by zerodrop test on Kubernetes 1.37: an unready Pod " +
			"answered 2,401 to 2,661 requests after its endpoint went, behind the gcp-nlb and gke-l4 profiles. An NLB with " +
			"IP targets does the same with its own translation: it deregisters the unready Pod's target and lets its " +
			"connections drain for the deregistration delay (300 s by default) and keeps them after it (aws-nlb-ip, " +
			"2026-11-28: 325 requests on reused connections after the endpoint went, none on new ones). Behind a Gateway API " +
			"TCPRoute or TLSRoute the same holds without NAT: the Gateway carries each client connection to one Pod for the " +
			"connection's life (Envoy's TCP proxy is a 1:1 connection proxy, and draining connections when hosts are removed " +
			"is an option off by default, close_connections_on_host_set_change: envoyproxy/envoy " +
			"docs/root/intro/arch_overview/listeners/tcp_proxy.rst, api/envoy/config/cluster/v3/cluster.proto).",
		Fix: "Have the app close keep-alive connections once it is unready (answer with Connection: close, or close idle " +
			"connections), or have clients bound a connection's life; the echo server's ECHO_KEEPALIVE=false turns " +
			"keep-alive off.",
		check:     checkKeepAliveL4,
		container: true,
	},
	{
		ID: "ZD090", Name: "service-selects-nothing", Severity: Info, Seeds: []string{incident.NodepoolBackend},
		Summary: "the Service selects no workload in the input",
		Description: "No Deployment, StatefulSet or DaemonSet in the input matches the Service's selector, so its " +
			"backends could not be checked (or the selector is wrong and the Service has no endpoints).",
		Fix: "Pass the workload's manifest too, or fix the selector.",
	},
	{
		ID: "ZD092", Name: "container-injected", Severity: Info, Seeds: []string{incident.RollingUpdateLocal},
		Summary: "the serving container is written at admission, so its probes and hooks are not in the manifest",
		Description: "Istio's gateway chart ships the proxy container as `image: auto` with injection on: the " +
			"mutating webhook replaces it with the injected proxy (its image, probes and shutdown), per Istio's " +
			"sidecar-injection docs (customizing injection). The container rules (preStop timing, probes) would judge " +
			"a placeholder, so they are not run for it; the Pod-level ones are.",
		Fix: "Run the doctor against the live cluster (zerodrop doctor --cluster) to judge the injected container.",
	},
	{
		ID: "ZD091", Name: "lb-annotation-invalid", Severity: Warning, Seeds: []string{incident.RollingUpdateLocal},
		Summary: "an LB profile or health-check annotation cannot be used",
		Description: "The Service names an unknown zerodrop.dev/lb-profile, a health-check annotation that is not " +
			"a number, a GKE BackendConfig the doctor cannot read (absent from the input, invalid, or asking a node " +
			"port that is not the Service's pinned healthCheckNodePort), or an Alibaba Cloud health check it cannot time (a " +
			"health-check-connect-port other than the pinned healthCheckNodePort, an unknown health-check-type, the check " +
			"switched off); the doctor used the default timing instead.",
		Fix: "Use a profile from `zerodrop doctor --list-profiles` and numeric health-check annotations; give the " +
			"doctor the BackendConfig the Service names, and pin spec.healthCheckNodePort when it asks that port.",
	},
}

func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int64(d/time.Second)) }

// checkServingWindow: kube-proxy's choice of endpoints for a Local Service
// (k8s.io/kubernetes pkg/proxy/topology.go CategorizeEndpoints: the node's
// ready endpoints, else its serving terminating ones, else none; the same in
// v1.34.2 and v1.37.2) drops a node's new connections once its last
// terminating endpoint stops serving; the LB keeps sending them for its lag
// because the healthCheckNodePort already failed at the start of
// termination (pkg/proxy/endpointschangetracker.go LocalReadyEndpoints feeds
// the health server in every proxier). The drop rules match only new
// connections (pkg/proxy/iptables/proxier.go iptablesJumpChains and
// pkg/proxy/nftables/proxier.go nftablesJumpChains: ctstate NEW), and
// pkg/proxy/conntrack/cleanup.go CleanStaleEntries clears UDP flows only,
// so established TCP connections never depend on readiness.
func checkServingWindow(t *target) []result {
	if !t.local || t.profile.FollowsServing || !t.kubeProxyTerminating() {
		return nil
	}
	tl, ok := timelineOf(t.c, t.wl.grace())
	lag := t.profile.RemovalLag()
	if !ok || !tl.servingEnds || lag == 0 {
		return nil
	}
	until := min(lag, tl.accept)
	if tl.serving >= until {
		return nil
	}
	period, ft := probeTiming(t.c.ReadinessProbe)
	return []result{{sev: Error, line: t.line(t.cpath("readinessProbe"), t.cpath("lifecycle", "preStop")),
		msg: fmt.Sprintf("%s fails readiness from its termination signal (at %s, %s); with readiness period %s x "+
			"(failureThreshold %d - 1) its endpoint can stop serving %s after termination starts, while the LB "+
			"(profile %s: %s) still sends the node new connections until %s and the app still accepts until %s: "+
			"kube-proxy drops the node's new connections for up to %s",
			tl.app.what, seconds(tl.signal), tl.ps, seconds(period), ft, seconds(tl.serving),
			t.profile.Name, t.profile.Describe(), seconds(lag), seconds(tl.accept), seconds(until-tl.serving))}}
}

func graceOrigin(w *workload) string {
	if w.template.Spec.TerminationGracePeriodSeconds == nil {
		return "API default"
	}
	return "set"
}

func checkPreStopLag(t *target) []result {
	lag := t.profile.RemovalLag()
	if !t.local || lag == 0 {
		return nil
	}
	line := t.line(t.cpath("lifecycle", "preStop"), t.cpath())
	if !t.kubeProxyTerminating() {
		// Before KEP-1669 kube-proxy never gave a terminating endpoint a
		// new connection: the node's new connections go nowhere for the
		// whole lag, whatever the hook (the source-ip-dilemma incident,
		// kubernetes/kubernetes#67592).
		return []result{{sev: Error, line: line,
			msg: fmt.Sprintf("on Kubernetes 1.%d kube-proxy sends no new connection to a terminating endpoint (it does "+
				"from 1.26, KEP-1669): for the LB health-check lag %s (profile %s: %s) after a node's last endpoint "+
				"starts terminating, the LB's new connections to that node are dropped whatever the preStop hook; "+
				"upgrade, or keep more than one ready endpoint per node",
				t.kubeMinor, seconds(lag), t.profile.Name, t.profile.Describe())}}
	}
	tl, ok := timelineOf(t.c, t.wl.grace())
	if !ok || tl.accept >= lag {
		return nil
	}
	what := tl.ps.String()
	if tl.known && tl.accept != tl.ps.duration {
		what = fmt.Sprintf("%s and %s accepting for %s after its signal", what, tl.app.what, seconds(tl.app.keepAccepting))
	}
	return []result{{sev: Error, line: line,
		msg: fmt.Sprintf("%s: new connections are accepted for %s after termination starts, less than the LB "+
			"health-check lag %s (profile %s: %s): for up to %s after the last endpoint on a node terminates the "+
			"LB still sends it new connections, which are dropped",
			what, seconds(tl.accept), seconds(lag), t.profile.Name, t.profile.Describe(), seconds(lag-tl.accept))}}
}

func checkShutdownBudget(t *target) []result {
	if t.shutdown == nil {
		return nil
	}
	budget := t.shutdown.Budget()
	line := t.line(t.cpath("lifecycle", "preStop"), t.cpath())
	if budget <= 0 {
		return []result{{sev: Error, line: line,
			msg: "graceful node shutdown is off on the nodes: when a node's machine shuts down the kubelet stops with " +
				"it, no preStop runs and nothing reports this Pod's end, so it stays a ready endpoint the LB and " +
				"kube-proxy send to until the Node is deleted or marked unreachable; turn it on (shutdownGracePeriod " +
				"above the Pod's shutdown plus shutdownGracePeriodCriticalPods) and drain nodes before they shut down"}}
	}
	ps := containerPreStop(t.c)
	grace := t.wl.grace()
	switch {
	case ps.known && ps.duration >= budget:
		return []result{{sev: Error, line: line,
			msg: fmt.Sprintf("the %s runs on a node's shutdown with the endpoint still ready and lasts the whole %s the "+
				"kubelet gives regular Pods (shutdown grace %s): the Pod is killed at its end while the LB and "+
				"kube-proxy still send to it", ps, seconds(budget), t.shutdown)}}
	case grace > budget:
		return []result{{sev: Warning, line: t.line(t.podPath("terminationGracePeriodSeconds"), t.cpath("lifecycle", "preStop")),
			msg: fmt.Sprintf("terminationGracePeriodSeconds %s (%s) is more than the %s the kubelet gives regular Pods on "+
				"a node's shutdown (shutdown grace %s): a shutdown that needs it cuts the Pod's drain short",
				seconds(grace), graceOrigin(t.wl), seconds(budget), t.shutdown)}}
	}
	return nil
}

func checkGraceVsPreStop(t *target) []result {
	ps := containerPreStop(t.c)
	if !ps.known || ps.duration == 0 {
		return nil
	}
	grace := t.wl.grace()
	if grace > ps.duration {
		return nil
	}
	return []result{{sev: Error, line: t.line(t.podPath("terminationGracePeriodSeconds"), t.cpath("lifecycle", "preStop")),
		msg: fmt.Sprintf("terminationGracePeriodSeconds %s (%s) does not exceed the %s: the app gets SIGTERM with no "+
			"time left to drain", seconds(grace), graceOrigin(t.wl), ps)}}
}

func checkNoPreStop(t *target) []result {
	if t.local {
		return nil
	}
	if t.c.Lifecycle == nil || t.c.Lifecycle.PreStop == nil {
		msg := "no preStop hook: SIGTERM arrives while " + stillSends(t, "this Pod")
		if t.profile.PodBackends && t.gated() {
			// The AWS controller's own guide: the gate holds a rollout,
			// it does not hold a terminating Pod
			// (kubernetes-sigs/aws-load-balancer-controller
			// docs/deploy/pod_readiness_gate.md).
			msg += fmt.Sprintf("; the readiness gate %s holds the rollout until each new target is healthy, "+
				"but does not delay an old Pod's termination", t.gateName())
		}
		return []result{{sev: Warning, line: t.line(t.cpath()), msg: msg}}
	}
	// A hook known to stop the server at once (kong quit, /wait-shutdown
	// with no grace period) delays nothing.
	if tl, ok := timelineOf(t.c, t.wl.grace()); ok && tl.accept == 0 {
		return []result{{sev: Warning, line: t.line(t.cpath("lifecycle", "preStop")),
			msg: fmt.Sprintf("%s: the server stops accepting as soon as the Pod terminates, while %s", tl.ps, stillSends(t, "it"))}}
	}
	return nil
}

// stillSends is what may still send new traffic to t's terminating Pod
// (named pod in the sentence): kube-proxy on other nodes, or, behind Pod
// targets, the LB itself until the target's deregistration reaches it.
func stillSends(t *target, pod string) string {
	if t.profile.PodBackends {
		return fmt.Sprintf("the LB (profile %s) may still send %s new requests, until its target's deregistration reaches the LB", t.profile.Name, pod)
	}
	return "kube-proxy on other nodes may still forward new connections to " + pod
}

// hostPortOf returns the first hostPort a Pod spec binds, or 0.
func hostPortOf(ps corev1.PodSpec) int32 {
	for _, c := range ps.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				return p.HostPort
			}
		}
	}
	return 0
}

func checkZeroGrace(t *target) []result {
	g := t.wl.template.Spec.TerminationGracePeriodSeconds
	if g == nil || *g != 0 {
		return nil
	}
	return []result{{sev: Error, line: t.line(t.podPath("terminationGracePeriodSeconds")),
		msg: "terminationGracePeriodSeconds is 0: the kubelet kills the Pod at once on every drain, rollout or scale-down, " +
			"cutting the requests it is serving and the ones the LB still sends it"}}
}

func checkPreStopUnknown(t *target) []result {
	ps := containerPreStop(t.c)
	if ps.known {
		return nil
	}
	// Behind Local an unreadable hook is the one thing standing between the
	// LB's lag and dropped connections: say what it must cover.
	if lag := t.profile.RemovalLag(); t.local && lag > 0 {
		return []result{{sev: Warning, line: t.line(t.cpath("lifecycle", "preStop")),
			msg: fmt.Sprintf("%s behind externalTrafficPolicy Local: the app must keep accepting connections for at least the LB lag %s (profile %s: %s) after the hook starts; ZD001 and ZD002 not evaluated",
				ps, seconds(lag), t.profile.Name, t.profile.Describe())}}
	}
	return []result{{sev: Info, line: t.line(t.cpath("lifecycle", "preStop")),
		msg: fmt.Sprintf("%s: ZD001 and ZD002 not evaluated", ps)}}
}

func checkSpread(t *target) []result {
	if !t.local || t.wl.replicas == nil || *t.wl.replicas < 2 {
		return nil
	}
	ps := t.wl.template.Spec
	own := t.wl.podLabels()
	// A constraint or anti-affinity term spreads these Pods only if its
	// labelSelector selects them: the scheduler counts the Pods the selector
	// matches, and a missing selector matches none (apimachinery
	// metav1.LabelSelectorAsSelector(nil) is labels.Nothing()).
	selects := func(ls *metav1.LabelSelector) bool {
		if ls == nil {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		return err == nil && sel.Matches(own)
	}
	byHost := func(key string) bool {
		return key == corev1.LabelHostname || key == corev1.LabelTopologyZone || key == corev1.LabelFailureDomainBetaZone
	}
	var blind []string // spreads whose selector misses these Pods
	for i, c := range ps.TopologySpreadConstraints {
		if !byHost(c.TopologyKey) {
			continue
		}
		if selects(c.LabelSelector) {
			return nil
		}
		blind = append(blind, fmt.Sprintf("topologySpreadConstraints[%d]", i))
	}
	if a := ps.Affinity; a != nil && a.PodAntiAffinity != nil {
		for i, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if term.TopologyKey == corev1.LabelHostname {
				if selects(term.LabelSelector) {
					return nil
				}
				blind = append(blind, fmt.Sprintf("podAntiAffinity.required[%d]", i))
			}
		}
		for i, wt := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if wt.PodAffinityTerm.TopologyKey == corev1.LabelHostname {
				if selects(wt.PodAffinityTerm.LabelSelector) {
					return nil
				}
				blind = append(blind, fmt.Sprintf("podAntiAffinity.preferred[%d]", i))
			}
		}
	}
	msg := fmt.Sprintf("%d replicas with externalTrafficPolicy Local and no spread over nodes: traffic splits per node, "+
		"so co-located Pods get uneven shares and one node drain can take several endpoints", *t.wl.replicas)
	if len(blind) > 0 {
		msg = fmt.Sprintf("%s: the labelSelector of %s matches none of these Pods' labels (%s), so it spreads nothing", msg, strings.Join(blind, ", "), own)
	}
	return []result{{sev: Warning, line: t.line(t.podPath("topologySpreadConstraints"), t.podPath("affinity"), t.podPath()), msg: msg}}
}

func checkSpreadCountsTainted(t *target) []result {
	ps := t.wl.template.Spec
	for _, tol := range ps.Tolerations {
		if tol.Key == "" && tol.Operator == corev1.TolerationOpExists {
			return nil // every taint tolerated: no node is one the Pods cannot use
		}
	}
	honors := t.release().SpreadHonorsTaints()
	var hard []string
	for i, c := range ps.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		if honors && c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
			continue
		}
		hard = append(hard, fmt.Sprintf("topologySpreadConstraints[%d] (%s, maxSkew %d)", i, c.TopologyKey, c.MaxSkew))
	}
	if len(hard) == 0 {
		return nil
	}
	if !honors {
		return []result{{sev: Warning, line: t.line(t.podPath("topologySpreadConstraints")),
			msg: fmt.Sprintf("on Kubernetes 1.%d the scheduler counts tainted and cordoned nodes as domains of %s with "+
				"DoNotSchedule (nodeTaintsPolicy is honoured from 1.26): a control-plane node, a tainted pool or a node "+
				"being drained holds the minimum at 0, so a rollout's surge Pod or a drained node's Pod can stay Pending; "+
				"use ScheduleAnyway before 1.26, or upgrade", t.kubeMinor, strings.Join(hard, ", "))}}
	}
	return []result{{sev: Warning, line: t.line(t.podPath("topologySpreadConstraints")),
		msg: fmt.Sprintf("%s: DoNotSchedule without nodeTaintsPolicy: Honor counts every node the Pods do not tolerate (a "+
			"control-plane node, a tainted pool, a cordoned node being drained) as a domain holding none of them, which keeps "+
			"the minimum at 0: once each node that takes them holds maxSkew, a rollout's surge Pod or a drained node's Pod "+
			"fits nowhere and stays Pending (the rollout stalls)", strings.Join(hard, ", "))}}
}

func checkPools(t *target) []result {
	if !t.local {
		return nil
	}
	pools, pinned := t.wl.pools()
	backend, ann := servicePool(t.svc)
	switch {
	case backend != "" && !pinned:
		return []result{{sev: Error, line: t.line(t.podPath("affinity"), tplPath),
			msg: fmt.Sprintf("the Service restricts the LB backend to pool %q (%s) but the Pods are not confined to it: "+
				"with Local, Pods scheduled elsewhere get no traffic (incident nodepool-backend)", backend, ann)}}
	case backend != "":
		var outside []string
		for _, p := range pools {
			if !poolCovered(backend, ann, p) {
				outside = append(outside, p)
			}
		}
		if len(outside) == 0 {
			return nil
		}
		return []result{{sev: Error, line: t.line(t.podPath("affinity"), t.podPath("nodeSelector"), tplPath),
			msg: fmt.Sprintf("the LB backend is pool %q (%s) but Pods may run in pool(s) %s: with Local those Pods get "+
				"no traffic (incident nodepool-backend)", backend, ann, strings.Join(outside, ", "))}}
	case pinned:
		sev := Info
		if t.profile.SinglePool {
			sev = Warning
		}
		return []result{{sev: sev, line: t.line(t.podPath("affinity"), t.podPath("nodeSelector"), tplPath),
			msg: fmt.Sprintf("the Pods are pinned to pool(s) %s and nothing pins the LB backend: an LB that takes one pool "+
				"(AKS Basic, incident nodepool-backend) may reach none of them; pin it with %s", strings.Join(pools, ", "), contract.LBPoolAnnotation)}}
	}
	return nil
}

func checkSingleReplica(t *target) []result {
	if t.wl.replicas == nil || *t.wl.replicas != 1 {
		return nil
	}
	return []result{{sev: Warning, line: t.line([]any{"spec", "replicas"}, []any{"spec"}),
		msg: "1 replica: a drain, node-pool replacement or eviction leaves the Service without endpoints until the replacement is ready"}}
}

func pdbOf(o *Object) *policyv1.PodDisruptionBudget {
	p, _ := o.Obj.(*policyv1.PodDisruptionBudget)
	return p
}

func checkPDBNever(t *target) []result {
	var out []result
	for _, o := range t.pdbs {
		pdb := pdbOf(o)
		why := pdbBlocks(pdb, t.wl.replicas)
		if why == "" {
			continue
		}
		detail := ""
		if t.local {
			detail = "; with Local, an LB that drops cordoned nodes (the drain-local-pdb incident's service controller) blackholes all traffic while the Pods wait there"
		}
		out = append(out, result{sev: Error, obj: o, line: o.FirstLine([]any{"spec", "maxUnavailable"}, []any{"spec", "minAvailable"}, []any{"spec"}),
			msg: fmt.Sprintf("PodDisruptionBudget %s %s: no eviction is ever allowed, so kubectl drain of a node running "+
				"these Pods never finishes%s", o.Name, why, detail)})
	}
	return out
}

// pdbBlocks says why a budget can never allow an eviction, or "".
func pdbBlocks(pdb *policyv1.PodDisruptionBudget, replicas *int32) string {
	if mu := pdb.Spec.MaxUnavailable; mu != nil {
		if (mu.Type == intstr.Int && mu.IntVal <= 0) || (mu.Type == intstr.String && strings.TrimSpace(mu.StrVal) == "0%") {
			return fmt.Sprintf("has maxUnavailable %s", mu.String())
		}
		return ""
	}
	if ma := pdb.Spec.MinAvailable; ma != nil {
		if ma.Type == intstr.String && strings.TrimSpace(ma.StrVal) == "100%" {
			return "has minAvailable 100%"
		}
		if replicas != nil && ma.Type == intstr.Int && ma.IntVal >= *replicas {
			return fmt.Sprintf("has minAvailable %d with %d replica(s)", ma.IntVal, *replicas)
		}
		if replicas != nil && ma.Type == intstr.String {
			if n, err := intstr.GetScaledValueFromIntOrPercent(ma, int(*replicas), true); err == nil && int32(n) >= *replicas {
				return fmt.Sprintf("has minAvailable %s of %d replica(s), rounded up to all of them", ma.StrVal, *replicas)
			}
		}
	}
	return ""
}

func checkPDBOverlap(t *target) []result {
	if len(t.pdbs) < 2 {
		return nil
	}
	var names []string
	for _, o := range t.pdbs {
		names = append(names, o.Name)
	}
	return []result{{sev: Error, obj: t.pdbs[1], line: t.pdbs[1].Source.Line,
		msg: fmt.Sprintf("PodDisruptionBudgets %s all select these Pods: the eviction API refuses to evict them, so drains stall",
			strings.Join(names, ", "))}}
}

func checkPDBUnhealthy(t *target) []result {
	var out []result
	for _, o := range t.pdbs {
		pdb := pdbOf(o)
		if pdbBlocks(pdb, t.wl.replicas) != "" {
			continue // ZD020 already says this budget blocks everything
		}
		if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
			continue
		}
		out = append(out, result{sev: Warning, obj: o, line: o.FirstLine([]any{"spec", "unhealthyPodEvictionPolicy"}, []any{"spec"}),
			msg: fmt.Sprintf("PodDisruptionBudget %s does not set unhealthyPodEvictionPolicy AlwaysAllow: a Pod that is "+
				"Running but not Ready stalls the drain of its node once the budget is used up", o.Name)})
	}
	return out
}

func checkNoPDB(t *target) []result {
	if len(t.pdbs) > 0 || !severalReplicas(t) {
		return nil
	}
	return []result{{sev: Info, line: t.line([]any{"spec", "replicas"}, []any{"spec"}),
		msg: fmt.Sprintf("no PodDisruptionBudget covers these %d replicas: draining several nodes at once can evict all of them", *t.wl.replicas)}}
}

// checkPoolDrain is ZD024: the new Pods' nodes joining the LB (their
// readiness, then the addition lag) against the old nodes leaving it (the
// removal lag), when no budget keeps some old Pods serving.
func checkPoolDrain(t *target) []result {
	remove, add := t.profile.RemovalLag(), t.profile.AdditionLag()
	if !t.local || remove <= 0 || add <= 0 || !evictsAll(t) {
		return nil
	}
	// The earliest a new Pod can be ready (the first probe's delay and
	// the successes it then needs) and the latest it should be (one more
	// period); the app's own start comes on top of both.
	var early, late time.Duration
	if p := t.c.ReadinessProbe; p != nil {
		period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
		early = time.Duration(p.InitialDelaySeconds)*time.Second + period*time.Duration(max(p.SuccessThreshold, 1)-1)
		late = early + period
	}
	sev := SeverityNone
	switch {
	case early+add > remove:
		sev = Error
	case late+add > remove:
		sev = Warning
	default:
		return nil
	}
	return []result{{sev: sev, line: t.line([]any{"spec", "replicas"}, []any{"spec"}),
		msg: fmt.Sprintf("no PodDisruptionBudget limits evictions: a pool drain evicts every replica there at once; their nodes leave %s %s after, "+
			"and a new Pod's node joins only once it is ready (%s-%s after its start, by its readiness probe) and checked healthy (%s more): "+
			"no healthy node for up to %s", t.profile.Name, seconds(remove), seconds(early), seconds(late), seconds(add), seconds(late+add-remove))}}
}

// evictsAll: no PodDisruptionBudget keeps any of the Pods from being
// evicted together (none, or one that allows every replica out).
func evictsAll(t *target) bool {
	replicas := int32(1)
	if t.wl.replicas != nil {
		replicas = *t.wl.replicas
	}
	for _, o := range t.pdbs {
		pdb := pdbOf(o)
		if mu := pdb.Spec.MaxUnavailable; mu != nil {
			if n, err := intstr.GetScaledValueFromIntOrPercent(mu, int(replicas), true); err == nil && n < int(replicas) {
				return false
			}
			continue
		}
		if ma := pdb.Spec.MinAvailable; ma != nil {
			if n, err := intstr.GetScaledValueFromIntOrPercent(ma, int(replicas), true); err == nil && n > 0 {
				return false
			}
		}
	}
	return true
}

// readinessGates are the Pod's containers besides the serving one whose
// readiness probe gates the Pod's: a Pod is ready only while all its
// containers are (kubernetes v1.37.2 pkg/kubelet/status/generate.go,
// GenerateContainersReadyCondition).
func readinessGates(t *target) []*corev1.Container {
	var out []*corev1.Container
	cs := t.wl.template.Spec.Containers
	for i := range cs {
		if i != t.ci && cs[i].ReadinessProbe != nil {
			out = append(out, &cs[i])
		}
	}
	return out
}

// checkNoReadiness: a serving container without a probe of its own. A
// sibling's probe (readinessGates) takes the endpoint out of rotation when
// the sibling cannot serve, but it cannot tell whether this container
// listens: a risk at start, no longer a certain drop (NGINX Gateway Fabric
// 1.6.2's nginx beside its controller: 0 dropped in a rollout and a drain,
// 2026-11-26).
func checkNoReadiness(t *target) []result {
	if t.c.ReadinessProbe != nil {
		return nil
	}
	if gates := readinessGates(t); len(gates) > 0 {
		return []result{{sev: Warning, line: t.line(t.cpath()),
			msg: fmt.Sprintf("container %q has no readinessProbe: the Pod's readiness is container %q's, which takes the "+
				"endpoint out when that container cannot serve but not when %q does not listen yet or any more", t.c.Name, gates[0].Name, t.c.Name)}}
	}
	if t.profile.PodBackends {
		// The LB checks each Pod target itself and sends it nothing
		// until that check passes, so a Pod that does not listen yet gets
		// no request from it; what is left of a rollout's race (the old
		// targets deregistered while the new ones are still being
		// checked) is ZD033's. Found by the doctor study's set C (an ALB
		// with IP targets, a NEG Ingress, a GKE Gateway): docs/doctor-study.md.
		return []result{{sev: Info, line: t.line(t.cpath()),
			msg: fmt.Sprintf("container %q has no readinessProbe: the LB (profile %s) checks the Pod itself before it sends to it "+
				"(%s), but a Pod that stops serving stays its target until that check fails, where a failing probe would "+
				"deregister it at once", t.c.Name, t.profile.Name, t.profile.Describe())}}
	}
	return []result{{sev: Error, line: t.line(t.cpath()),
		msg: fmt.Sprintf("container %q has no readinessProbe: it is an endpoint before it listens and while it cannot serve", t.c.Name)}}
}

// checkReadinessLiveness: one handler for both probes is fine when liveness
// gives up later than readiness; Kubernetes' own guide recommends it ("the
// same low-cost HTTP endpoint as for readiness probes, but with a higher
// failureThreshold", kubernetes.io Configure Liveness, Readiness and Startup
// Probes). It is a hazard only when the restart comes no later than the
// removal from rotation.
func checkReadinessLiveness(t *target) []result {
	r, l := t.c.ReadinessProbe, t.c.LivenessProbe
	if r == nil || l == nil || !sameHandler(t.c, r, l) {
		return nil
	}
	rp, rf := probeTiming(r)
	lp, lf := probeTiming(l)
	unready, restart := rp*time.Duration(rf), lp*time.Duration(lf)
	if restart > unready {
		return nil
	}
	return []result{{sev: Warning, line: t.line(t.cpath("readinessProbe")),
		msg: fmt.Sprintf("container %q: readiness and liveness probe the same handler and liveness gives up first or at the same time "+
			"(%s x %d = %s against readiness %s x %d = %s), so the Pod is restarted instead of taken out of rotation",
			t.c.Name, seconds(lp), lf, seconds(restart), seconds(rp), rf, seconds(unready))}}
}

func checkRollout(t *target) []result {
	switch o := t.wl.obj.Obj.(type) {
	case *appsv1.Deployment:
		s := o.Spec.Strategy
		if s.Type == appsv1.RecreateDeploymentStrategyType {
			return []result{{sev: Error, line: t.line([]any{"spec", "strategy", "type"}),
				msg: "strategy Recreate stops every Pod before the new ones start: the Service has no endpoints during each rollout"}}
		}
		replicas := *t.wl.replicas
		_, unavail, err := RolloutFenceposts(s, replicas)
		if err != nil {
			return []result{{sev: Error, line: t.line([]any{"spec", "strategy"}),
				msg: fmt.Sprintf("rolling update maxUnavailable/maxSurge cannot be read: %v", err)}}
		}
		if replicas > 0 && unavail >= replicas {
			return []result{{sev: Error, line: t.line([]any{"spec", "strategy", "rollingUpdate", "maxUnavailable"}, []any{"spec", "strategy"}, []any{"spec", "replicas"}),
				msg: fmt.Sprintf("maxUnavailable resolves to %d of %d replica(s): a rollout may take every endpoint down at once", unavail, replicas)}}
		}
	case *appsv1.StatefulSet:
		s := o.Spec.UpdateStrategy
		if s.Type == appsv1.OnDeleteStatefulSetStrategyType {
			return nil
		}
		replicas := *t.wl.replicas
		var mu *intstr.IntOrString
		if s.RollingUpdate != nil {
			mu = s.RollingUpdate.MaxUnavailable
		}
		unavail, err := scaledValue(mu, replicas, false, "1")
		if err == nil && unavail < 1 {
			unavail = 1
		}
		if err == nil && replicas > 0 && unavail >= replicas {
			// A StatefulSet cannot surge: its RollingUpdateStatefulSetStrategy
			// has partition and maxUnavailable only (k8s.io/api apps/v1),
			// and it replaces a Pod of one ordinal by deleting it first.
			return []result{{sev: Error, line: t.line([]any{"spec", "updateStrategy"}, []any{"spec", "replicas"}),
				msg: fmt.Sprintf("a StatefulSet rolling update replaces %d of %d replica(s) at a time without surge: every endpoint goes down", unavail, replicas),
				fix: "A StatefulSet cannot surge (its updateStrategy has maxUnavailable and partition only; each Pod is deleted before its " +
					"replacement starts): run at least 2 replicas, keep maxUnavailable below the replica count (1, the default), and add a " +
					"PodDisruptionBudget with maxUnavailable: 1."}}
		}
	case *appsv1.DaemonSet:
		if !t.local {
			return nil
		}
		s := o.Spec.UpdateStrategy
		if s.Type == appsv1.OnDeleteDaemonSetStrategyType {
			return nil
		}
		if s.RollingUpdate != nil && s.RollingUpdate.MaxSurge != nil && s.RollingUpdate.MaxSurge.String() != "0" && s.RollingUpdate.MaxSurge.String() != "0%" {
			return nil
		}
		msg := "a DaemonSet without maxSurge replaces each node's only endpoint with nothing in between: with Local every node leaves the LB during its update"
		if port := hostPortOf(o.Spec.Template.Spec); port != 0 {
			// The scheduler's NodePorts filter (k8s.io/kubernetes
			// pkg/scheduler/framework/plugins/nodeports) keeps a second Pod
			// asking the same hostPort off the node, so a surge Pod would
			// stay Pending and the rollout stall.
			msg += fmt.Sprintf("; maxSurge cannot help: the Pods bind hostPort %d, which the old Pod holds while a surge Pod waits for it, so the surge Pod never schedules. "+
				"Drain each node's traffic before its update instead (a preStop that outlasts the LB lag), or drop the hostPort", port)
		}
		return []result{{sev: Warning, line: t.line([]any{"spec", "updateStrategy"}, []any{"spec"}), msg: msg}}
	}
	return nil
}

func checkMinReady(t *target) []result {
	if !(t.local || t.profile.PodBackends) || t.wl.minReady > 0 {
		return nil
	}
	add := t.profile.AdditionLag()
	if t.profile.PodBackends {
		if t.gated() {
			return nil // the LB's gate holds every new Pod unready until its check passed
		}
		return []result{{sev: Warning, line: t.line([]any{"spec", "minReadySeconds"}, []any{"spec"}),
			msg: fmt.Sprintf("minReadySeconds is 0 behind Pod targets (profile %s): a rollout moves on as soon as a new Pod is "+
				"ready, while the LB sends it nothing until its own check of the Pod passed (up to %s), and the old Pods' "+
				"targets are deregistered as they terminate: the Service can be left with no healthy target (the outage "+
				"pod readiness gates exist for)", t.profile.Name, seconds(add))}}
	}
	hint := ""
	if add > 0 {
		hint = fmt.Sprintf(" (profile %s adds a node after up to %s)", t.profile.Name, seconds(add))
	}
	return []result{{sev: Warning, line: t.line([]any{"spec", "minReadySeconds"}, []any{"spec"}),
		msg: "minReadySeconds is 0 with externalTrafficPolicy Local: a rollout continues before the LB takes traffic to the new Pod's node" + hint}}
}

// namesGate reports whether the template names the vendor's gate: its
// condition type, or one of the same domain (AWS names one per
// TargetGroupBinding, target-health.elbv2.k8s.aws/<binding>).
func namesGate(tpl *corev1.PodTemplateSpec, condition string) bool {
	return gateOfDomain(tpl, condition) != ""
}

// gateOfDomain is the template's readiness gate of condition's domain, ""
// for none.
func gateOfDomain(tpl *corev1.PodTemplateSpec, condition string) string {
	domain, _, _ := strings.Cut(condition, "/")
	for _, g := range tpl.Spec.ReadinessGates {
		if d, _, _ := strings.Cut(string(g.ConditionType), "/"); d == domain {
			return string(g.ConditionType)
		}
	}
	return ""
}

// keepAliveCanReachUnready: the serving container's readiness can flip on
// its own (a readiness probe unlike its liveness probe) and nothing turns
// keep-alive off. Both keep-alive rules start here.
func keepAliveCanReachUnready(t *target) bool {
	r, l := t.c.ReadinessProbe, t.c.LivenessProbe
	if r == nil || (l != nil && sameHandler(t.c, r, l)) {
		return false // readiness cannot flip on its own
	}
	for _, e := range t.c.Env {
		if e.Name == "ECHO_KEEPALIVE" && strings.EqualFold(strings.TrimSpace(e.Value), "false") {
			return false
		}
	}
	return true
}

// checkKeepAliveL4 is ZD041: the clients' own connections, where no L7
// front end stands between (that is ZD040): an L4 LB's, through
// kube-proxy's NAT or to Pod targets, and a TCPRoute's or TLSRoute's,
// whose Gateway carries each client connection to one Pod
// (carriesConnections). A UDPRoute carries no connection.
func checkKeepAliveL4(t *target) []result {
	if t.l7Via != "" || t.podDirect || !keepAliveCanReachUnready(t) {
		return nil
	}
	lb := t.svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	if !lb && t.l4Via == "" {
		return nil // only a UDPRoute in front
	}
	// Info, not a warning: the fix is in the app or its clients, which the
	// manifests do not show, so a warning would sit on every workload
	// whose readiness can flip, the carefully probed ones first.
	const unready = "once this Pod turns unready, its endpoint goes but the open connections keep being answered by it (incident keepalive-unready)"
	var msg string
	switch {
	case lb && t.l4Via != "":
		msg = "a client's keep-alive connection stays NATed to the Pod it reached first, and one through " + t.l4Via +
			" stays on it too (the Gateway carries each client connection to one Pod for the connection's life): " + unready
	case lb:
		msg = "a client's keep-alive connection stays NATed to the Pod it reached first: " + unready
	default:
		msg = "a client's connection through " + t.l4Via + " stays on the Pod it reached first (the Gateway carries each " +
			"client connection to one Pod for the connection's life): " + unready
	}
	return []result{{sev: Info, line: t.line(t.cpath("readinessProbe"), t.cpath()), msg: msg}}
}

func checkKeepAlive(t *target) []result {
	if t.l7Via == "" || t.podDirect || !keepAliveCanReachUnready(t) {
		return nil
	}
	return []result{{sev: Warning, line: t.line(t.cpath("readinessProbe"), t.cpath()),
		msg: fmt.Sprintf("behind an L7 load balancer (%s) that reuses keep-alive connections, a Pod that turns unready can keep "+
			"receiving requests on them after its endpoint is removed (incident keepalive-unready)", t.l7Via)}}
}
