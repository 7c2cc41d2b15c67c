// The measured platform limits several scenarios share: each Mechanism
// names the events that open its failure windows and says, with the run
// that measured it, why zero drops is impossible there for a workload.

package suites

import (
	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

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

// kubeVIPAnnouncerLeaves is metallbAnnouncerLeaves behind kube-vip's ARP:
// taking the endpoints of the node that holds a Local Service's lease
// moves its address, and the client's kept-alive connections with it.
var kubeVIPAnnouncerLeaves = Mechanism{Opens: []string{zdv1.EventEndpointStoppedServing, zdv1.EventAnnouncerChanged}, Text: "kube-vip " +
	"(services mode, ARP, a lease per Service) with externalTrafficPolicy Local lets a node campaign for a Service's " +
	"lease only while it has a local endpoint whose serving condition is true; when the holder's last one stops " +
	"serving (its drain, or a scale-down that takes its Pod) it releases the lease and removes the address, and " +
	"another node with an endpoint takes both (kube-vip v0.9.2 pkg/manager/watch_endpoints.go, servicesLeader.go " +
	"StartServicesLeaderElection). The client's neighbour entry keeps sending to the old node until the new holder's " +
	"gratuitous ARP, which comes on its next tick of vip_arpRate (3000 ms; pkg/arp/arp.go sends none at takeover); " +
	"the old node's conntrack keeps the open connections served meanwhile, and once the ARP moves them they reach a " +
	"node with no conntrack entry for them and are reset. A request sent on one fails (Go's transport re-sends a GET " +
	"on a new connection by itself, which the suite counts as dropped). Without keep-alive it costs more: every " +
	"request's new connection still goes to the old node until that ARP, and kube-proxy there drops it (Local, no " +
	"local endpoint: k8s.io/kubernetes v1.37.2 pkg/proxy/iptables/proxier.go syncProxyRules, \"has no local " +
	"endpoints\"), so every request sent in that gap fails. No Deployment setting keeps the client's connections off " +
	"the old node; a shorter vip_arpRate (KUBE_VIP_ARP_RATE, at least 500 ms) shortens the gap. Measured on this " +
	"suite's kind cluster, Kubernetes v1.37.2, 2026-11-29: drain-node/kube-vip-arp/local/hardened 1 GET re-sent 1.9 s " +
	"after the lease passed (announcer-changed); without keep-alive 126 of 2,175 requests in 2.5 s, " +
	"drain-pool-with-pdb 96 in 1.9 s, nodepool-replacement 76 in 1.5 s, each from the holder's last endpoint " +
	"stopping to serve; with vip_arpRate 500 ms drain-pool-with-pdb 0 of 7,615 and nodepool-replacement 29 in " +
	"0.56 s. Its windows open when the holder's last endpoint stops serving (endpoint-stopped-serving) or " +
	"when the lease passes."}

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
// flows of a node whose health check fails (aws-nlb, azure-basic). A
// Pod-targeted one (aws-nlb-ip) is not among them: its targets leave when
// their endpoints stop being ready, before any check fails, and drain.
func unhealthyResetsFlows(m Model) bool {
	return m.Profile.Mode == profiles.ModeL4 && m.Profile.Flows.OnUnhealthy == profiles.FlowClose && !m.Profile.PodBackends()
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

// removalCutsFlows picks the L4 LB models whose backends are nodes and that
// close a removed backend's established flows at once (no connection
// draining: gcp-nlb's target pool, azure-lb, azure-basic, gke-legacy).
func removalCutsFlows(m Model) bool {
	f := m.Profile.Flows
	return m.Profile.Mode == profiles.ModeL4 && !m.Profile.PodBackends() && f.OnRemoved == profiles.FlowClose && f.DrainTimeout.D() == 0
}

// exclusionCutsFlowsReason is why a node labelled out of the LBs before it
// leaves (a termination handler, Karpenter) cannot be drop-free on such an
// LB, whatever the workload.
var exclusionCutsFlowsReason = Mechanism{Opens: []string{zdv1.EventNodeLabelled, zdv1.EventLBBackendRemoved, zdv1.EventCordon}, Text: "The node is " +
	"labelled node.kubernetes.io/exclude-from-external-load-balancers before it is drained (Karpenter's terminator, " +
	"aws-node-termination-handler with --exclude-from-load-balancers), and the service controller re-syncs the LBs on " +
	"that label at once (k8s.io/cloud-provider controllers/service shouldSyncUpdatedNode; nodeIncludedPredicate). This " +
	"LB has no connection draining for a removed backend (flows.onRemoved close, drainTimeout 0: a GCP target pool, " +
	"Azure's load balancer as profiled), so the established flows of the client's kept-alive connections through the " +
	"node are cut the moment it leaves, before any Pod there is evicted: a request in flight on one is lost. What avoids " +
	"it is an LB that drains a removed backend (aws-nlb's deregistration delay, gke-l4's connection draining). Measured " +
	"on this suite's kind cluster, spot-interruption-handled, 2026-11-28: gcp-nlb/cluster/hardened 1 timeout on a " +
	"reused connection 115 ms after the LB removed the labelled node, azure-lb/cluster/hardened 1 GET re-sent 145 ms " +
	"after (\"established flows are closed (reset)\"). Its windows open at the label and the LB's lb-backend-removed."}

// metallbExcludedAnnouncer is why labelling the node MetalLB announces from
// out of the LBs cannot be drop-free behind MetalLB L2.
var metallbExcludedAnnouncer = Mechanism{Opens: []string{zdv1.EventNodeLabelled, zdv1.EventCordon}, Text: "MetalLB's speaker " +
	"does not announce from a node labelled node.kubernetes.io/exclude-from-external-load-balancers (metallb v0.15.2 " +
	"internal/k8s/nodes IsNodeExcludedFromBalancers, read by speaker/layer2_controller.go ShouldAnnounce; " +
	"--ignore-exclude-lb turns it off), so labelling the node that announces a VIP moves the VIP, and the client's " +
	"kept-alive connections through the old node reach a node with no conntrack entry for them: they are reset, as " +
	"when the announcing node's last endpoint stops serving. No Deployment setting keeps the client's connections off " +
	"the old node. Measured on this suite's kind cluster, spot-interruption-handled, 2026-11-28: " +
	"metallb/cluster/hardened 1 GET re-sent 0.6 s after the label, as the node's cordon followed. Its windows open " +
	"at the label or the cordon just after it."}

// metallbAnnouncerDeparts is why a departure that does not label the node
// out of the LBs cannot be drop-free behind MetalLB L2 with Cluster when
// that node announces the Service's address.
var metallbAnnouncerDeparts = Mechanism{Opens: []string{zdv1.EventNodeShutdown, zdv1.EventNodeOff}, Text: "MetalLB L2 " +
	"with externalTrafficPolicy Cluster announces a Service's address from one node among all whose speaker runs: the " +
	"first by sha256 of node name and address (metallb v0.15.2 speaker/layer2_controller.go ShouldAnnounce, " +
	"nodesWithActiveSpeakers). A cordon, a drain and the cluster autoscaler's ToBeDeletedByClusterAutoscaler taint do " +
	"not change that choice (only the exclusion label, NetworkUnavailable or the speaker's end do), so the announcer " +
	"keeps taking the client's traffic until its machine goes; then its speaker is gone, another node announces, and " +
	"the client's kept-alive connections through the old node are lost with it. No Deployment setting keeps them off " +
	"that node (a tool that labels the node out of the LBs first, as Karpenter does, moves the address earlier, with " +
	"the same reset: the exclusion label's limit). Measured on this suite's kind " +
	"cluster, 2026-11-29, twice (the leaving node was the announcer by that hash both times): " +
	"consolidation-autoscaler/metallb/cluster/hardened 1 GET re-sent 300 ms after the machine's shutdown began. Its " +
	"windows open at the machine's shutdown."}

// exclusionLimits are the limits of a departure whose tool labels the node
// out of the LBs and then drains it (spot-interruption-handled,
// consolidation): the label's own, and a drain's where kube-proxy does not
// send new connections to terminating endpoints.
func exclusionLimits() []Limit {
	var out []Limit
	for _, p := range []corev1.ServiceExternalTrafficPolicy{clusterPolicy, localPolicy} {
		out = append(out,
			Limit{On: removalCutsFlows, Policy: p, Reason: exclusionCutsFlowsReason},
			Limit{LB: contract.LBMetalLB, Policy: p, Reason: metallbExcludedAnnouncer})
	}
	return append(append(out, drainLimits()...), rehashLimits()...)
}

// drainLimits are the limits of a drain of one node (drain-node's, and a
// departure's that drains): where the drained node's last endpoint decides
// (Local), and where the cordon itself takes the node out (gke-legacy).
func drainLimits() []Limit {
	return []Limit{
		{Proxy: withoutTerminatingEndpoints, NewConnections: true, Policy: localPolicy, Reason: noTerminatingEndpoints},
		{LB: contract.LBMetalLB, Policy: localPolicy, Reason: metallbAnnouncerLeaves},
		{On: kubeVIPModel, Policy: localPolicy, Reason: kubeVIPAnnouncerLeaves},
		{On: cordonDropsFlows, Policy: clusterPolicy, Reason: cordonDropsFlowsReason},
		{On: cordonDropsFlows, Policy: localPolicy, Reason: cordonDropsFlowsReason},
		{On: unhealthyResetsFlows, Policy: localPolicy, Reason: unhealthyResetsFlowsReason},
		{On: bgpModel, Policy: localPolicy, Reason: ecmpRehash},
		{On: kubeVIPBGPModel, Policy: localPolicy, Reason: kubeVIPRehash},
	}
}

// rehashLimits are metallb-bgp's limit for every traffic policy: a
// disruption that adds or removes a node (its speaker advertising or
// withdrawing every Service's route) rehashes the flows of both.
func rehashLimits() []Limit {
	return []Limit{{On: bgpModel, Policy: clusterPolicy, Reason: ecmpRehash}, {On: bgpModel, Policy: localPolicy, Reason: ecmpRehash},
		{On: kubeVIPBGPModel, Policy: clusterPolicy, Reason: kubeVIPRehash}, {On: kubeVIPBGPModel, Policy: localPolicy, Reason: kubeVIPRehash}}
}

// kubeVIPDepartsLimits are kube-vip-arp's limits for a departure: the
// machine that goes may hold a Service's lease whatever the policy.
func kubeVIPDepartsLimits() []Limit {
	return []Limit{{On: kubeVIPModel, Policy: clusterPolicy, Reason: kubeVIPAnnouncerDeparts},
		{On: kubeVIPModel, Policy: localPolicy, Reason: kubeVIPAnnouncerDeparts}}
}

// kubeVIPRehash is ecmpRehash behind kube-vip's BGP mode, whose speakers
// also keep a leaving machine's routes while it shuts down.
var kubeVIPRehash = Mechanism{Opens: []string{zdv1.EventRouteChanged, zdv1.EventNodeShutdown}, Text: "kube-vip in BGP mode " +
	"without leader election advertises a Service's address from every node the EndpointSlices name (kube-vip v0.9.2 " +
	"pkg/manager/watch_services.go and watch_endpoints.go: with Cluster every node while the Service has any endpoint, " +
	"with Local the nodes with a local serving endpoint), and the router's multipath route moves flows between nodes " +
	"whenever a node's path comes or goes, as behind MetalLB's BGP mode (the hash-threshold ranges are recomputed; see " +
	"metallb-bgp's limit): a flow moved to a node with no conntrack entry for it is reset there, and no Deployment setting " +
	"keeps the client's connections where they were. kube-vip v0.9.2 also does not end on SIGTERM in BGP mode: startBGP " +
	"(pkg/manager/manager_bgp.go) only cancels the context its services watch was made with, and that watch " +
	"(watch_services.go, a RetryWatcher stopped only on a shutdown channel this path never closes) retries every second " +
	"on the cancelled context, so the process and its BGP session live until SIGKILL: a deleted Pod after its grace " +
	"period (measured 30.9 s with grace 30 s, against 1.7 s for the ARP kube-vip), a machine's shutdown without the " +
	"kubelet's graceful node shutdown after systemd's 90 s stop timeout (measured: machines off 90.9-92.4 s after their " +
	"shutdown began where MetalLB's columns alone took 1.6-5.4 s after a drain), while the router keeps sending that " +
	"node its share of the flows. Measured on this suite's kind cluster " +
	"(Kubernetes v1.37.2, FRR 8.4.4, ECMP hash l4, 2026-11-29): 1 GET re-sent 20-37 ms after a route-changed in " +
	"consolidation-autoscaler/cluster/hardened, spot-interruption-handled/cluster/hardened, nodepool-replacement/local/" +
	"hardened, and 2 in drain-pool-with-pdb/local/hardened. Its windows open at the router's route-changed event for " +
	"the Service's address, or at the machine's shutdown."}

// kubeVIPAnnouncerDeparts is why a departure cannot be drop-free behind
// kube-vip's ARP when the leaving machine holds the Service's lease.
var kubeVIPAnnouncerDeparts = Mechanism{Opens: []string{zdv1.EventNodeShutdown, zdv1.EventNodeOff, zdv1.EventAnnouncerChanged}, Text: "kube-vip " +
	"(services mode, ARP, a lease per Service) reads no cordon, taint or node.kubernetes.io/exclude-from-external-load-" +
	"balancers label (kube-vip v0.9.2 pkg/manager/watch_services.go), and with Cluster every node campaigns for a " +
	"Service's lease whatever its endpoints, so a machine that leaves keeps its leases until its kube-vip Pod ends with " +
	"it (then it releases them, servicesLeader.go ReleaseOnCancel) or, if the machine stops first, until they expire " +
	"(5 s). The new holder's first gratuitous ARP comes on its next tick of vip_arpRate (3000 ms; pkg/arp/arp.go sends " +
	"none at takeover): the client's connections then move to a node with no conntrack entry for them and are reset, " +
	"and a request sent on one fails (Go's transport re-sends a GET by itself, which the suite counts as dropped). With " +
	"Local the same holds when the leaving node's endpoints still serve when its machine goes. No Deployment setting " +
	"moves the lease first. Measured on this suite's kind cluster (Kubernetes v1.37.2, 2026-11-29): " +
	"spot-interruption-handled/kube-vip-arp/cluster/hardened 1 GET re-sent 2.7 s after the lease passed, " +
	"consolidation/kube-vip-arp/cluster/hardened 1 re-sent 0.87 s after. Its windows open at the machine's shutdown, " +
	"its end, or the lease's passing."}

// ecmpRehash is why a change in the set of nodes that advertise a
// Service's address cannot be drop-free behind MetalLB's BGP mode and an
// ECMP router, whatever the workload: with hash-threshold groups the flows
// of nodes that stay move too; with resilient ones only the leaving node's.
var ecmpRehash = Mechanism{Opens: []string{zdv1.EventRouteChanged}, Text: "MetalLB in BGP mode advertises a Service's " +
	"address from every node that should take its traffic (metallb v0.15.2 speaker/bgp_controller.go ShouldAnnounce: with " +
	"Cluster every node not labelled out of the LBs while any endpoint can serve, with Local only nodes with a local " +
	"endpoint that can serve) and withdraws it when that stops; the router installs one multipath route and picks a " +
	"nexthop per flow by hashing it into ranges, one per nexthop in order (hash-threshold, RFC 2992, the only kind of " +
	"multipath group FRR 8.4's zebra makes). When a nexthop comes or goes the ranges are recomputed and parts of the hash " +
	"space pass from one nexthop to another (Linux Documentation/networking/nexthop-group-resilient.rst), so flows of " +
	"nodes that stay can move too, not only the leaving node's: their packets reach a node with no conntrack entry for " +
	"them, and kube-proxy there sends them to a Pod that resets them. MetalLB's documentation names it BGP mode's " +
	"limitation (website/content/concepts/bgp.md at v0.15.2, \"Limitations\": \"the majority of existing connections will " +
	"end up suddenly being forwarded to a different backend\"). No Deployment setting keeps the client's connections " +
	"where they were. Resilient nexthop groups (Linux 5.13+) move only the leaving nexthop's buckets and give a joining " +
	"one only idle buckets, so only the flows of a node that leaves the route move (no FRR release up to 10.7 makes " +
	"bgpd's routes use them; the suite's router mirrors them with ROUTER_ECMP=resilient, docs/bgp.md), but the leaving " +
	"node's own kept-alive connections still move and are reset, so the limit holds either way, with fewer resets. " +
	"Measured on this suite's kind cluster " +
	"(ECMP hash l4, 2026-11-28): consolidation/metallb-bgp/local/hardened 1 GET re-sent 27 ms after the router withdrew " +
	"the labelled node's route (172.19.0.2,.3,.5 -> .2,.3), consolidation-autoscaler/metallb-bgp/local/hardened 1 GET " +
	"re-sent 20 ms after it withdrew the drained node's (.2,.3,.5 -> .3,.5); drain-node's withdrawal of the middle " +
	"nexthop (.2,.3,.5 -> .2,.5), which moves no other node's flows, dropped nothing. Its windows open at the router's " +
	"route-changed event for the Service's address."}

// taintUnseen picks the node-targeted cloud LB models whose check for a
// Cluster Service does not ask kube-proxy (a TCP connect to the traffic
// port: aws-nlb, azure-lb; an L7 path on the NodePort: gclb): kube-proxy's
// failing /healthz on the autoscaler's taint never reaches them.
func taintUnseen(m Model) bool {
	return m.Cloud && !m.Profile.PodBackends() && m.Profile.HealthCheckFor(clusterPolicy).Target != profiles.TargetKubeProxy
}

// autoscalerTaintUnseen is why the cluster autoscaler's scale-down cannot
// be drop-free with Cluster behind such an LB, whatever the workload.
var autoscalerTaintUnseen = Mechanism{Opens: []string{zdv1.EventNodeShutdown, zdv1.EventNodeOff}, Text: "The cluster " +
	"autoscaler marks the node with its ToBeDeletedByClusterAutoscaler taint, drains it and deletes the machine; it " +
	"does not label the node out of the LBs (kubernetes/autoscaler cluster-autoscaler-1.35.0 " +
	"core/scaledown/actuation). The service controller would leave a tainted node out, but from Kubernetes 1.27 it " +
	"re-syncs the LBs only when a node comes or goes or its exclusion label changes, not for the taint " +
	"(k8s.io/cloud-provider controllers/service shouldSyncUpdatedNode); kube-proxy fails its /healthz for the taint " +
	"(KEP-3836, GA in 1.31), which takes the node out of an LB that checks kube-proxy (gcp-nlb: 0 dropped), but this " +
	"LB's check for externalTrafficPolicy Cluster is the Service's own port, which kube-proxy keeps answering for the " +
	"other nodes' Pods. So the empty node stays a backend until the Node is deleted, and the client's kept-alive " +
	"connections through it end with the machine: a request in flight on one times out. The fix is the LB's, not the " +
	"workload's: a health check on kube-proxy's :10256/healthz where the LB lets the Service choose (the AWS Load " +
	"Balancer Controller's aws-load-balancer-healthcheck-port/-path annotations), or a tool that labels the node " +
	"node.kubernetes.io/exclude-from-external-load-balancers before it drains (Karpenter: consolidation). Measured on " +
	"this suite's kind cluster, 2026-11-28: consolidation-autoscaler Cluster hardened, aws-nlb 1 timeout, azure-lb " +
	"2, gclb 46 in 5.4 s, each from 2.1 s after the machine's shutdown began (off at 2.3 s)."}
