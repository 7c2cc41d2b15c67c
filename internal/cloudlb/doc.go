// Package cloudlb is zerodrop's cloud-style load balancer for kind clusters
// (LB=cloud): a controller that implements Services of type LoadBalancer the
// way GCP, AWS and Azure do, so the suite can reproduce the outages of the
// seeds (health-check lag, cordoned nodes leaving the LB, one-nodepool
// backends, keep-alive reuse by an L7 front end) on a laptop.
//
// # Shape
//
// One LB container per cluster on the kind docker network (StartKind), built
// FROM the local kind node image (Debian with nftables, iproute2, procps) plus
// the static zerodrop-lb binary; no image is pulled. It runs the Controller
// (client-go informers on Services, Nodes and EndpointSlices, kubeconfig
// pointing at <cluster>-control-plane:6443 on the kind network), the L4
// Dataplane in its own network namespace, the L7Proxy, and an admin server
// (/healthz, /state, /events).
//
// It is a product of its own: cmd/zerodrop-lb runs it inside the LB
// container, and nothing of the test tool links it. The suites and the
// cluster provider use the thin client zerodrop.dev/zerodrop/harness/lb (start, find and
// stop the container, read its state, wait until it settled, follow its
// events), which also holds the admin API's types.
//
// Which Services: type LoadBalancer with spec.loadBalancerClass
// "zerodrop.dev/cloud-lb", and, with --claim-unclassed (what LB=cloud sets,
// because harness/cluster then does not install MetalLB), every
// LoadBalancer Service without a class. With MetalLB present the two never
// fight: MetalLB ignores classed Services, the cloud LB ignores unclassed ones.
//
// Addresses: the 32 addresses of the kind subnet just below the 32 that
// harness/cluster gives MetalLB (KindVIPRange). The controller writes
// status.loadBalancer.ingress (ipMode VIP), so kube-proxy on every node
// installs its rules for the address, exactly as on a cloud.
//
// LB profiles (package zerodrop.dev/zerodrop/clusters/lb/profiles, one YAML file each) carry each vendor's
// health-check timing, eligibility rule and flow behaviour as data with the
// source of every number; a Service picks one with zerodrop.dev/lb-profile.
//
// # L4 data plane: direct server return with nftables and policy routing
//
// The client's packets reach a node unchanged (destination VIP:port, source
// the client), so kube-proxy on the node does what it does behind a cloud
// passthrough LB: DNAT to a local endpoint (Local) or to any endpoint with SNAT
// (Cluster), and with Local and no local endpoint it drops the packet. Replies
// leave the node straight for the client with the VIP as source (the node has
// the client on-link): direct server return, and the client address is
// preserved (incident nodepool-backend, 003).
//
//   - The VIPs sit on the LB's lo, so the LB answers ARP for them on the kind
//     network and the host reaches them with no route of its own. A new VIP
//     is announced with a gratuitous ARP: a host that cached the address at
//     a previous LB container's MAC would otherwise send into the void until
//     its neighbour entry fails. The local
//     routing table moves from rule priority 0 to 200, behind the fwmark rules
//     (priority 100), so a marked packet to a local VIP is forwarded instead
//     of delivered.
//   - nftables (one table, rewritten atomically by `nft -f` on every change)
//     decides per packet, for TCP and UDP ports. A SYN picks an active node
//     with jhash over the 4-tuple and records the flow in a dynamic map
//     (4-tuple -> mark, per-service idle timeout; one map per protocol).
//     Every later packet looks its mark up in that map; a "live" map says
//     whether the (service, node) pair still takes established flows
//     (active or draining). A TCP packet of anything else meets the
//     profile's closeAction: drop, or "reset" (the mark is cleared and the
//     LB's own stack, which has no socket on VIP:port, answers with a RST
//     from the VIP). UDP has no handshake to wait for and nothing to reset:
//     a datagram of no known flow, or of a flow whose node no longer takes
//     it, starts a new flow on an active node, so a UDP client that keeps its
//     port follows the backends (what the upstream "preserve UDP traffic"
//     specs ask of an LB).
//   - Session affinity: for a Service with sessionAffinity ClientIP on a
//     profile whose vendor maps it (sessionAffinity clientIP: GCP CLIENT_IP,
//     Azure SourceIP), the hash that picks a new flow's node is over the
//     client address alone, so a client stays on one node while the active
//     set stands, and kube-proxy's own affinity on that node keeps it on one
//     Pod. A profile that refuses it (aws-nlb: the AWS provider fails
//     EnsureLoadBalancer) builds no LB for such a Service and says why.
//   - Mark = service id << 16 | node id. `ip rule fwmark <node>/0xffff lookup
//     1000+<node>`, and that table holds `default via <nodeIP> onlink`: the
//     packet goes out unchanged to the node's MAC.
//   - Redirects and reverse-path filtering are off in the LB's namespace; IP
//     forwarding is on.
//
// Why a flow map instead of conntrack marks (the first design): the LB sees
// only the client-to-node half of each TCP connection, and conntrack then
// calls every packet after the SYN invalid (an ACK in SYN_SENT from the
// original direction), stripping its ct mark. VIP traffic is therefore not
// tracked at all (notrack in the raw hook) and the dynamic map is the state.
// A SYN on a 4-tuple the map already knows first deletes the old entry, so a
// reused client port never sticks to a node that left. The flow map survives
// every rule change (it is never flushed), which is what keeps established
// flows on their node while the backend set changes with no process restart.
// A restart of the LB forgets the flows (their packets then meet the
// closeAction), as a cloud LB's own failover would.
//
// # L4 with Pod targets: NAT
//
// An NLB with IP targets (profile aws-nlb-ip) sends each connection to a Pod
// address, which does not own the VIP, so direct server return cannot carry
// it. Such a Service's flows are translated instead, in a table of their own
// (zerodrop_lb_nat, rebuilt with the main table in one `nft -f`
// transaction): the VIP is conntracked, a new flow's first packet picks an
// active target by jhash over its 4-tuple in the nat prerouting hook and is
// DNATed to the Pod's own port, and the postrouting hook masquerades it to
// the LB's address, which is what the NLB does by default for IP targets
// over TCP (client IP preservation off; the target answers the LB, and
// conntrack undoes both translations on the reply). The translation lives in
// conntrack, so rebuilding the table moves no established flow; in the
// forward hook a packet of a flow whose target is no longer active or
// draining for its Service meets the closeAction (reject with a TCP reset,
// which nf_reject sends through the flow's own conntrack entry, so it leaves
// from the VIP; or a drop). With no active target a new connection reaches
// the LB's own stack and is refused. UDP ports of such a Service are not
// forwarded (the Pod targets' ports are read for TCP only).
//
// Eligibility (eligibility.go): which nodes a Service's LB may use is the
// Kubernetes service controller's decision, and it changed across versions.
// ServiceControllerRules holds it per minor version as read from
// k8s.io/cloud-provider controllers/service/controller.go: NotReady nodes left
// every LB up to 1.24, only Cluster Services' in 1.25-1.26, and none from 1.27
// (KEP-3458); the ToBeDeletedByClusterAutoscaler taint excludes a node from
// 1.23; the exclusion label's value is parsed from 1.34. From 1.27 the
// controller re-syncs LBs only when a node is added or deleted, the exclusion
// label flips or the Service changes, so a node that turns NotReady or gets
// the taint stays a backend until then; the controller reproduces that (a
// node-set epoch per re-sync) and says so with an event. The rules are those
// of the API server's version (discovered at start; --kubernetes-minor in
// tests). On top, the cloud's own rules from the profile: control-plane nodes
// never, cordoned nodes for gke-legacy (Kubernetes <= 1.18), one node pool
// for azure-basic.
//
// Backends (backends.go): a node is active when it is eligible and healthy (or
// every eligible node when none is healthy and the profile fails open). When
// it stops being active its flows follow the profile: keep (GCP, Azure
// Standard: established flows continue on an unhealthy backend), drain for a
// period (AWS deregistration delay, GKE L4 connection draining) and then close
// or keep (AWS without connection termination), or close.
// A new Service starts failing open (no node has passed yet); the first node
// to pass ends that, and every node still short of its healthy threshold
// leaves at once — the events name the end of fail-open as the reason, and
// /state reports such nodes as pending. Settled (no pending node, address
// forwarded) is what the suite and WaitSettled wait for before any load.
//
// Health checks (health.go): one check per (service, node) every interval,
// bounded by the timeout, with the profile's check for the Service's traffic
// policy: an HTTP GET of /healthz on the healthCheckNodePort for Local and on
// kube-proxy's :10256/healthz for Cluster (target kube-proxy; kube-proxy fails
// the latter for nodes being deleted or tainted ToBeDeletedByClusterAutoscaler
// from 1.31, KEP-3836), a TCP connect to the Service's NodePort (target
// traffic-port: AWS NLB and Azure for Cluster), or a GET of a path on the
// NodePort (L7). Healthy after healthyThreshold consecutive passes, unhealthy
// after unhealthyThreshold failures; a node starts unhealthy. Each flip is an
// event (lb-node-healthy / lb-node-unhealthy) with the checks that caused it,
// recorded before the data plane acts on it.
//
// Cleanup finalizer (finalizer.go): as the service controller does
// (k8s.io/cloud-provider controllers/service/controller.go,
// syncLoadBalancerIfNeeded), service.kubernetes.io/load-balancer-cleanup goes
// on a Service before its address is written and comes off once the data
// plane has stopped forwarding for it: when it is deleted, or its type
// changes away from LoadBalancer (the address is cleared then too). So a
// Service deleted while no LB runs (`zerodrop lb stop` with the cluster up)
// waits for the LB, as it would for a cloud's controller; removing the
// finalizer by hand releases it.
//
// # L7 (gclb)
//
// An HTTP reverse proxy on VIP:port (the VIP is local, so its packets reach the
// proxy) that round-robins requests over the active nodes' nodeIP:nodePort with
// per-node keep-alive pools and X-Forwarded-For. kube-proxy NATs a connection
// once, when it opens, so requests on a reused connection keep reaching the
// pod it was NATed to after that pod's endpoint is gone (incident keepalive-unready).
// A Service of a profile that honours GKE's BackendConfig (gclb) may name one
// (annotation cloud.google.com/backend-config); its spec.healthCheck replaces
// the profile's check fields, and a port points the check at that node port,
// as ingress-gce does (pkg/translator/healthchecks.go UpdateFromBackendConfig).
// The LB installs the CRD when the cluster lacks it, as GKE clusters have it,
// and says in a note event which check it runs for the Service and why
// (backendconfig.go).
//
// A request whose pooled connection closes before its response is answered
// 502 and not sent again: Go's transport would re-send a GET on a new
// connection by itself and hide the keep-alive race from every verdict
// (sendOnce, proxy.go).
//
// # Pod targets (podtargets.go)
//
// A profile whose check targets Pods (healthCheck.target pod: GKE NEG, AWS
// IP targets) makes the Service's Pods the LB's targets instead of its
// nodes: the endpoints of its EndpointSlices that pods.register names
// (ready ones, or every one not terminating), each checked straight from
// the LB on its serving port, the check built from the serving container's
// readiness probe where the vendor does that (fromReadinessProbe). The L7
// proxy sends to podIP:targetPort, and the data plane routes each node's
// spec.podCIDR through that node (a VPC's routes on a cloud), so packets
// leave the LB for the Pod's own address and kube-proxy is never on the
// path. A target that stops qualifying is deregistered at once and leaves
// as flows.onRemoved says; its events name pod/<namespace>/<name>, with
// its address and node, and its health flips are lb-target-healthy and
// lb-target-unhealthy. Where the vendor has a pod readiness gate
// (pods.readinessGate) the LB sets that condition on every Pod that names
// it, True once the Pod's target is healthy in every Service of the
// profile, and registers a Pod whose containers are ready but that waits
// on the gate, as the AWS controller does; the gate is never injected (no
// webhook runs), so the Pods carry it in their own spec.
//
// # Events
//
// Every state change is a zdv1.Event (source "lb") on the LB's wall clock,
// which is the host's (containers share the kernel clock), logged and
// streamed as JSON lines on GET /events; SubscribeEvents follows the stream
// into any zdv1.EventSink and resumes with ?since= after a break. GET
// /state shows per Service the eligible nodes (and why others are not), each
// node's last check, the active and draining backends and the nodes holding
// ready endpoints, for comparing the LB's view with the cluster's.
//
// # What it does not model
//
// A report column stands for the profile's timing, eligibility and flow rules
// above, on one LB instance. Not modelled: SCTP ports (not forwarded), IPv6,
// proxy protocol, per-zone backends, cross-zone balancing and zonal
// failover, the LB's own failover or provisioning time, the affinity
// timeout (sessionAffinityConfig; the LB keeps a client on its node while
// the active set stands), Pod targets behind an L4 LB (AWS NLB IP
// targets), the programming latency between a Pod target's
// deregistration and the vendor's front ends (no vendor publishes it), the
// cut of an L7 backend's requests in flight when it is removed with no
// connection draining (GCP: with a draining timeout of 0 the LB "stops
// sending all traffic to the removed VM or endpoint" at once; the proxy
// lets them finish, and cuts them only when a drain with an end runs out),
// a GKE BackendConfig's connectionDraining,
// GKE subsetting's 25-node
// limit, the AWS CLB TCP proxy, and the health checks of UDP-only Services
// on profiles that probe the traffic port (AWS probes it over TCP, Azure
// adds no probe for UDP ports): the LB says it cannot check such a Service.
// Health checks come from one LB address, not from a vendor's prober ranges.
//
// Limits: IPv4, TCP and UDP; one LB instance per cluster (no LB failover).
package cloudlb
