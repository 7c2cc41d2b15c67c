// Package cluster gives the suite real Kubernetes clusters to break: a
// Provider creates and deletes a cluster, hands out its kubeconfig, loads
// images into its nodes and scales nodepools up and down the way a cloud
// nodepool does (new machines join with a fresh token; removed ones are
// drained, deleted and destroyed).
//
// Two providers exist: "kind" (local Docker containers built with
// sigs.k8s.io/kind as a library, MetalLB in L2 mode for LoadBalancer
// Services) and "existing" (any cluster reached through a kubeconfig; it
// neither creates nor deletes, and refuses nodepool changes).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/router"
)

// ErrUnsupported is returned (wrapped) by providers for operations they cannot
// perform, such as nodepool changes on an existing cluster.
var ErrUnsupported = errors.New("not supported by this provider")

// Provider is a cluster the suite can create, reach and re-pool.
type Provider interface {
	// Name is the provider's name ("kind", "existing").
	Name() string
	// Create brings the cluster up, ready for workloads: nodes Ready, DNS
	// and a LoadBalancer implementation running.
	Create(ctx context.Context) error
	// Delete removes everything Create made. Deleting a cluster that does
	// not exist is not an error.
	Delete(ctx context.Context) error
	// Kubeconfig is the path of a kubeconfig file for the cluster.
	Kubeconfig() string
	// LoadImages makes local Docker images available on every node without
	// a registry.
	LoadImages(ctx context.Context, images ...string) error
	// AddNodePool adds count nodes labelled contract.PoolLabel=name plus labels, with
	// taints, and waits until they are Ready.
	AddNodePool(ctx context.Context, name string, count int, labels map[string]string, taints []corev1.Taint) error
	// RemoveNodePool cordons and drains every node of the pool, deletes the
	// Node objects and destroys the machines.
	RemoveNodePool(ctx context.Context, name string) error
	// Nodes lists the cluster's nodes.
	Nodes(ctx context.Context) ([]Node, error)
	// SetShutdownGrace sets the kubelet's graceful node shutdown on node
	// and waits until the kubelet runs with it.
	SetShutdownGrace(ctx context.Context, node string, g ShutdownGrace) error
	// PowerOff shuts the node's machine down the way its operating system
	// does on a power-button or ACPI shutdown (the kubelet sees it) and
	// returns once the machine is off; it stays off.
	PowerOff(ctx context.Context, node string, timeout time.Duration) error
	// RemoveNode deletes the Node object and destroys its machine, without
	// a drain.
	RemoveNode(ctx context.Context, node string) error
	// AddNode joins one new node named name to pool, with labels and taints,
	// and waits until it is Ready.
	AddNode(ctx context.Context, pool, name string, labels map[string]string, taints []corev1.Taint) error
}

// Node is one node of a cluster.
type Node struct {
	Name       string // Kubernetes node name (for kind also the container name)
	Role       string // "control-plane" or "worker"
	Pool       string // value of contract.PoolLabel, "" when unlabelled
	InternalIP string
	Ready      bool
}

// Pool describes a nodepool of the default topology or one to add.
type Pool struct {
	Name   string
	Count  int
	Labels map[string]string
	Taints []corev1.Taint
}

// DefaultPools is the default worker topology: pool-a with two workers and
// pool-b with one (the control plane comes on top).
func DefaultPools() []Pool {
	return []Pool{{Name: "pool-a", Count: 2}, {Name: "pool-b", Count: 1}}
}

// Providers lists the provider names New accepts.
func Providers() []string { return []string{"existing", "kind"} }

// New returns the named provider. An unknown name is an error that lists the
// known ones; nothing is created.
func New(name string, opts ...Option) (Provider, error) {
	switch name {
	case "kind":
		return NewKind(opts...), nil
	case "existing":
		return NewExisting(opts...)
	default:
		return nil, fmt.Errorf("unknown cluster provider %q: known providers are %s (set PROVIDER to one of them)",
			name, strings.Join(Providers(), ", "))
	}
}

// options are shared by both providers; each uses what applies to it.
type options struct {
	name            string
	nodeImage       string
	kubeVersion     kubeVersion // of nodeImage; set by Kind.Create
	metallbManifest string
	kubeconfig      string
	pools           []Pool
	sink            zdv1.EventSink
	logger          *slog.Logger
	stateDir        string
	cacheDir        string
	metallb         bool
	readyTimeout    time.Duration
	drainTimeout    time.Duration
	progress        func(msg string)
	podSubnet       string
	lbAddressCount  int
	retain          bool
	lb              string // "metallb" or "cloud" (harness/lb); see WithLoadBalancer
	lbProfile       string
	kubeProxyGates  FeatureGates
	routerImage     string
	// noKubeVIP leaves kube-vip out of an LB=all cluster (WithoutKubeVIP).
	noKubeVIP bool
	// noKubeVIPBGP leaves kube-vip's BGP mode out (WithoutKubeVIPBGP).
	noKubeVIPBGP bool
	// kubeVIPARPRate is kube-vip's period of gratuitous ARP
	// (WithKubeVIPARPRate; zero: DefaultKubeVIPARPRate).
	kubeVIPARPRate time.Duration
	routerTuning   router.Tuning
}

// Option configures a provider.
type Option func(*options)

// WithName sets the cluster name (kind: container and kubeconfig context
// prefix). Default "zerodrop".
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithNodeImage sets the kind node image.
func WithNodeImage(image string) Option { return func(o *options) { o.nodeImage = image } }

// WithMetalLBManifest names MetalLB's manifest (metallb-native.yaml) for a
// node image that does not carry it at /kind/manifests; the images that
// `make node-image` builds do.
func WithMetalLBManifest(path string) Option { return func(o *options) { o.metallbManifest = path } }

// WithBGPRouter adds MetalLB's BGP mode to a kind cluster that runs
// MetalLB: the upstream router (harness/router) from image, tuned by t
// (ECMP hash, nexthop groups, BGP hold time), on the cluster's network,
// the speakers peering with it and MetalLB's BGP pool
// (contract.MetalLBBGPPool) routed from the host through it.
func WithBGPRouter(image string, t router.Tuning) Option {
	return func(o *options) { o.routerImage, o.routerTuning = image, t }
}

// WithoutKubeVIP leaves kube-vip out of a cluster that runs every LB
// (contract.LBAll): no columns kube-vip-arp and kube-vip-bgp. kube-vip
// v0.9.2 in BGP mode does not end on SIGTERM, so a machine that shuts down
// with it and without the kubelet's graceful node shutdown lasts systemd's
// stop timeout (docs/kube-vip.md; the suites park it off a leaving machine
// whose batch does not measure it).
func WithoutKubeVIP() Option { return func(o *options) { o.noKubeVIP = true } }

// WithoutKubeVIPBGP leaves kube-vip's BGP mode (column kube-vip-bgp, its
// router) out of a cluster that runs kube-vip, and with it the hold of
// a machine's shutdown for systemd's stop timeout (WithoutKubeVIP).
func WithoutKubeVIPBGP() Option { return func(o *options) { o.noKubeVIPBGP = true } }

// WithKubeVIPARPRate sets how often kube-vip's ARP mode announces each
// address it holds (vip_arpRate; ValidKubeVIPARPRate): it sends none when
// it takes a Service's lease, so the period bounds how long the clients'
// neighbour entries still name the previous holder (docs/kube-vip.md).
func WithKubeVIPARPRate(d time.Duration) Option { return func(o *options) { o.kubeVIPARPRate = d } }

// WithKubeconfig sets where the kubeconfig is written (kind) or read
// (existing).
func WithKubeconfig(path string) Option { return func(o *options) { o.kubeconfig = path } }

// WithPools replaces the default worker nodepools.
func WithPools(pools ...Pool) Option { return func(o *options) { o.pools = pools } }

// WithEventSink sends what the provider does (pool-added, node-added,
// cordon, drain-start, ...) to sink.
func WithEventSink(sink zdv1.EventSink) Option { return func(o *options) { o.sink = sink } }

// WithLogger sets the logger for detail; default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithStateDir sets where host state (sysctls to restore, whether the docker
// network was ours) is recorded between create and delete (default
// CacheDir/state).
func WithStateDir(dir string) Option { return func(o *options) { o.stateDir = dir } }

// WithCacheDir sets where the provider keeps what outlives one process:
// host state (CacheDir/state, unless WithStateDir says otherwise) and the
// cloud LB's built binary (CacheDir/lb). Default: zerodrop under the user's
// cache directory (os.UserCacheDir).
func WithCacheDir(dir string) Option { return func(o *options) { o.cacheDir = dir } }

// WithLoadBalancer picks what implements LoadBalancer Services on kind:
// "metallb" (default, L2), "cloud" (harness/lb: a health-checked,
// node-based LB with vendor profiles; MetalLB is then not installed and the
// cloud LB takes every LoadBalancer Service) or "all" (both: MetalLB takes
// the Services without a loadBalancerClass, the cloud LB those of
// contract.CloudLBClass). profile is the cloud LB's default profile ("" =
// generic).
func WithLoadBalancer(kind, profile string) Option {
	return func(o *options) {
		o.lb, o.lbProfile = kind, profile
		o.metallb = kind != contract.LBCloud
	}
}

// cloudLB reports whether the cluster runs the cloud LB, and whether it
// takes Services without a class too (only when MetalLB is absent).
func (o *options) cloudLB() (runs, claimAll bool) {
	return o.lb == contract.LBCloud || o.lb == contract.LBAll, o.lb == contract.LBCloud
}

// WithKubeProxyFeatureGates sets kube-proxy's feature gates on a kind
// cluster it creates (KubeProxyConfiguration featureGates). They are how one
// release can be measured with a behaviour and without it, e.g.
// ProxyTerminatingEndpoints=false on v1.27 (beta and on by default there;
// k8s.io/kubernetes v1.27.4 pkg/features/kube_features.go). kube-proxy
// refuses gates its release does not know, and locked GA gates.
func WithKubeProxyFeatureGates(g FeatureGates) Option {
	return func(o *options) { o.kubeProxyGates = g }
}

// WithDrainTimeout bounds the drain of one node.
func WithDrainTimeout(d time.Duration) Option { return func(o *options) { o.drainTimeout = d } }

// WithRetainOnFailure keeps a cluster whose Create failed, for debugging
// (an interrupted Create still cleans up).
func WithRetainOnFailure(on bool) Option { return func(o *options) { o.retain = on } }

// WithProgress receives one human-readable line per step, for CLIs.
func WithProgress(f func(msg string)) Option { return func(o *options) { o.progress = f } }

func buildOptions(opts []Option) options {
	o := options{
		name:           "zerodrop",
		pools:          DefaultPools(),
		sink:           zdv1.Discard,
		logger:         slog.New(slog.DiscardHandler),
		metallb:        true,
		readyTimeout:   5 * time.Minute,
		drainTimeout:   3 * time.Minute,
		progress:       func(string) {},
		podSubnet:      "10.244.0.0/16",
		lbAddressCount: 32,
		lb:             contract.LBMetalLB,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// emit records an event from the harness; a failing sink is logged, never
// fatal to the cluster operation.
func (o *options) emit(typ, object, msg string, fields map[string]string) {
	e := zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: typ, Object: object, Message: msg, Fields: fields}
	if err := o.sink.Event(e); err != nil {
		o.logger.Warn("event sink failed", "type", typ, "object", object, "err", err)
	}
	o.logger.Info(msg, "event", typ, "object", object)
}

func validatePool(name string, count int) error {
	if name == "" {
		return errors.New("nodepool name is empty")
	}
	if errs := validateLabelValue(name); errs != "" {
		return fmt.Errorf("nodepool name %q: %s", name, errs)
	}
	if count < 1 {
		return fmt.Errorf("nodepool %q: count %d, want at least 1", name, count)
	}
	return nil
}

// validateLabelValue checks a pool name is usable as a label value and as
// part of a container (DNS) name: lowercase alphanumerics and '-'.
func validateLabelValue(v string) string {
	if len(v) > 40 {
		return "longer than 40 characters"
	}
	for i, r := range v {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || (r == '-' && i > 0 && i < len(v)-1)
		if !ok {
			return "must be lowercase letters, digits and inner '-'"
		}
	}
	return ""
}

func sortNodes(ns []Node) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Role != ns[j].Role {
			return ns[i].Role == "control-plane"
		}
		return ns[i].Name < ns[j].Name
	})
}
