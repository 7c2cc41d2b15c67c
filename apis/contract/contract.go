// Package contract holds the names zerodrop shares with the clusters it
// tests: the labels and annotations it sets or reads on nodes, Services and
// workloads, and the load balancer implementations it can run against. Each
// is written here once; the fixtures, the cluster providers, the doctor, the
// LB and the suites read them from here. It imports nothing.
package contract

const (
	// PoolLabel is the node label naming the node pool a node belongs to.
	PoolLabel = "zerodrop.dev/pool"

	// TaintToBeDeletedByClusterAutoscaler is the taint the cluster
	// autoscaler puts on a node it is about to delete (kubernetes/autoscaler
	// cluster-autoscaler/utils/taints ToBeDeletedTaint); the service
	// controller and kube-proxy's /healthz read it too.
	TaintToBeDeletedByClusterAutoscaler = "ToBeDeletedByClusterAutoscaler"
	// TaintKarpenterDisrupted is the taint Karpenter puts on a node it is
	// about to disrupt (kubernetes-sigs/karpenter pkg/apis/v1
	// DisruptedTaintKey).
	TaintKarpenterDisrupted = "karpenter.sh/disrupted"
	// LBProfileAnnotation on a Service names the LB profile (timing and
	// behaviour of a vendor's load balancer) that implements it, for the
	// cloud-style LB and for `zerodrop doctor`.
	LBProfileAnnotation = "zerodrop.dev/lb-profile"
	// LBPoolAnnotation restricts a Service's LB backend to one node pool,
	// like the AKS annotation of the nodepool-backend incident
	// (docs/incidents.md).
	LBPoolAnnotation = "zerodrop.dev/lb-pool"
	// HardeningLabel records which workload hardening (naive or hardened)
	// built an object. Not to be confused with an LB profile.
	HardeningLabel = "zerodrop.dev/profile"
	// CloudLBClass is the spec.loadBalancerClass zerodrop's cloud-style LB
	// owns.
	CloudLBClass = "zerodrop.dev/cloud-lb"

	// FrontPodHeader and FrontNodeHeader are the response headers a proxy
	// standing as the workload's Pods (fixtures.Front) adds to every
	// answer: its own Pod and node, which the load attributes the answer
	// to instead of the echo server's behind it.
	FrontPodHeader  = "Zerodrop-Front-Pod"
	FrontNodeHeader = "Zerodrop-Front-Node"
)

// Load balancer implementations a kind cluster can run (LB=...).
const (
	// LBMetalLB is MetalLB in L2 mode.
	LBMetalLB = "metallb"
	// LBCloud is zerodrop's health-checked, node-based LB with vendor
	// profiles (harness/lb).
	LBCloud = "cloud"
	// LBAll runs both side by side: MetalLB takes the Services without a
	// spec.loadBalancerClass, the cloud LB only those of CloudLBClass, so a
	// Service's class and profile annotation pick its LB model.
	LBAll = "all"
	// LBMetalLBBGP is MetalLB in BGP mode behind zerodrop's upstream
	// router (harness/router): a column of LB=all, on the MetalLB that
	// takes classless Services, for the Services that ask for its pool.
	LBMetalLBBGP = "metallb-bgp"
	// MetalLBBGPPool is the MetalLB address pool of BGP mode (not
	// auto-assigned); a Service asks for it with MetalLBPoolAnnotation.
	MetalLBBGPPool = "zerodrop-bgp"
	// MetalLBPoolAnnotation picks a Service's MetalLB address pool (metallb
	// v0.15.2 controller/service.go AnnotationAddressPool).
	MetalLBPoolAnnotation = "metallb.io/address-pool"
	// MetalLBBGPPrefix is the BGP pool's addresses: a /24 of the
	// benchmarking block 198.18.0.0/15 (RFC 2544 appendix C, RFC 6890),
	// meant for a lab's own devices and never routed publicly; this host
	// routes it only to the router container.
	MetalLBBGPPrefix = "198.18.0.0/24"
	// LBKubeVIPARP is kube-vip in services mode with ARP and a leader
	// election per Service: a column of LB=all, for the Services of
	// KubeVIPClass.
	LBKubeVIPARP = "kube-vip-arp"
	// KubeVIPClass is the spec.loadBalancerClass kube-vip takes when it
	// runs with lb_class_only (kube-vip v0.9.2 pkg/kubevip
	// config_types.go LoadBalancerClassOnly; pkg/manager watch_services.go
	// filters by it); MetalLB and the cloud LB leave such a Service alone.
	KubeVIPClass = "kube-vip.io/kube-vip-class"
	// KubeVIPAddressAnnotation names a Service's address for kube-vip,
	// which allocates none itself (kube-vip v0.9.2 pkg/cluster
	// instance.go FetchServiceAddresses reads it before status and spec).
	KubeVIPAddressAnnotation = "kube-vip.io/loadbalancerIPs"
	// KubeVIPHostAnnotation is where kube-vip records, on a Service, the
	// node that won its lease (kube-vip v0.9.2 pkg/manager services.go
	// updateStatus).
	KubeVIPHostAnnotation = "kube-vip.io/vipHost"
	// KubeVIPConfigMap (namespace kube-system) records the range of the
	// kind network the cluster gave kube-vip's Services (key "range",
	// "first-last") and its class (key "class").
	KubeVIPConfigMap = "zerodrop-kube-vip"
	// KubeVIPDaemonSet (namespace kube-system) runs kube-vip-arp's
	// kube-vip on every worker.
	KubeVIPDaemonSet = "kube-vip"
	// LBKubeVIPBGP is kube-vip in services mode with BGP, behind its own
	// upstream router (harness/router, instance RouterKubeVIP): a column of
	// LB=all, for the Services of KubeVIPBGPClass.
	LBKubeVIPBGP = "kube-vip-bgp"
	// KubeVIPBGPClass is the spec.loadBalancerClass of the kube-vip that
	// runs BGP (its lb_class_name): one class per kube-vip, so the ARP one
	// and the BGP one never take the same Service.
	KubeVIPBGPClass = "zerodrop.dev/kube-vip-bgp"
	// KubeVIPBGPConfigMap (namespace kube-system) records the range of
	// KubeVIPBGPPrefix that kube-vip's BGP Services take their addresses
	// from (key "range").
	KubeVIPBGPConfigMap = "zerodrop-kube-vip-bgp"
	// KubeVIPBGPDaemonSet (namespace kube-system) runs kube-vip-bgp's
	// kube-vip on every worker.
	KubeVIPBGPDaemonSet = "kube-vip-bgp"
	// KubeVIPBGPParkedLabel on a node keeps KubeVIPBGPDaemonSet off it
	// (its node affinity requires the label absent): the suites park it on
	// a machine that leaves under witnesses none of which measures
	// kube-vip-bgp, since its process does not end on SIGTERM and would hold
	// the machine's shutdown for systemd's stop timeout (docs/kube-vip.md).
	KubeVIPBGPParkedLabel = "zerodrop.dev/kube-vip-bgp-parked"
	// KubeVIPBGPPrefix is the BGP kube-vip's addresses: the /24 after
	// MetalLBBGPPrefix in the benchmarking block, routed by this host only
	// to kube-vip's router.
	KubeVIPBGPPrefix = "198.18.1.0/24"
	// RouterKubeVIP is the instance name of kube-vip's router: MetalLB's
	// speakers already hold the first router's one session per node
	// address.
	RouterKubeVIP = "kube-vip"
)

// LoadBalancers lists the implementations, the default first.
func LoadBalancers() []string { return []string{LBMetalLB, LBCloud, LBAll} }
