package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kube"
	"zerodrop.dev/zerodrop/harness/lb"
	"zerodrop.dev/zerodrop/internal/sched"
)

// DefaultNodeImage is the node image clusters/images/build-node.sh builds
// offline (make node-image) for the default KUBERNETES_VERSION
// (clusters/images/versions.sh); move both together.
const DefaultNodeImage = "zerodrop/kind-node:v1.37.2"

// kindNetwork is the docker network kind puts every node on.
const kindNetwork = "kind"

// Kind is a kind cluster on the local Docker daemon.
type Kind struct {
	o  options
	kp *kindcluster.Provider
}

var _ Provider = (*Kind)(nil)

// NewKind returns a kind provider; nothing happens until Create.
func NewKind(opts ...Option) *Kind {
	o := buildOptions(opts)
	if o.nodeImage == "" {
		o.nodeImage = DefaultNodeImage
	}
	if o.cacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		o.cacheDir = filepath.Join(dir, "zerodrop")
	}
	if o.stateDir == "" {
		o.stateDir = filepath.Join(o.cacheDir, "state")
	}
	if o.kubeconfig == "" {
		o.kubeconfig = filepath.Join(o.stateDir, o.name+".kubeconfig")
	}
	return &Kind{o: o, kp: kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{o.logger}))}
}

// Name implements Provider.
func (k *Kind) Name() string { return "kind" }

// Kubeconfig implements Provider.
func (k *Kind) Kubeconfig() string { return k.o.kubeconfig }

// ClusterName is the kind cluster name.
func (k *Kind) ClusterName() string { return k.o.name }

func (k *Kind) controlPlane() string { return k.o.name + "-control-plane" }

func (k *Kind) exists() (bool, error) {
	names, err := k.kp.List()
	if err != nil {
		return false, fmt.Errorf("list kind clusters: %w", err)
	}
	return slices.Contains(names, k.o.name), nil
}

// Create implements Provider: host state is recorded, kind creates the
// nodes, then flannel, CoreDNS and MetalLB are brought up and waited for. A
// cluster of the same name that already exists is reused (its add-ons are
// re-applied and waited for). When ctx ends mid-way, or any step fails on a
// cluster this call created, everything created is removed again.
func (k *Kind) Create(ctx context.Context) error {
	// kind's own commands in the default class, whatever the load runs in.
	return sched.Normal(func() error { return k.create(ctx) })
}

func (k *Kind) create(ctx context.Context) (err error) {
	o := &k.o
	if _, err := kindConfig(*o); err != nil {
		return fmt.Errorf("kind cluster %q: %w", o.name, err)
	}
	if _, err := docker(ctx, nil, "image", "inspect", "-f", "{{.Id}}", o.nodeImage); err != nil {
		return fmt.Errorf("node image %s is not in the local Docker (build it with `make node-image` or set KIND_NODE_IMAGE): %w", o.nodeImage, err)
	}
	v, vs, err := nodeImageVersion(ctx, o.nodeImage)
	if err != nil {
		return fmt.Errorf("kind cluster %q: %w (a kind node image carries its Kubernetes version there)", o.name, err)
	}
	o.kubeVersion = v
	o.progress(fmt.Sprintf("node image %s: Kubernetes %s", o.nodeImage, vs))
	if len(o.kubeProxyGates) > 0 {
		o.progress("kube-proxy feature gates: " + o.kubeProxyGates.String())
	}
	exists, err := k.exists()
	if err != nil {
		return err
	}
	if exists {
		if herr := k.answers(ctx, reuseWait); herr != nil {
			// A cluster left behind by an earlier run does not survive every
			// restart of the Docker daemon (its API server may never come
			// back). One zerodrop made (its host record is here) is replaced;
			// anyone else's is left alone.
			st, err := loadState(o.stateDir, o.name)
			if err != nil {
				return err
			}
			if st == nil {
				return fmt.Errorf("kind cluster %q exists but its API server does not answer: %w; zerodrop did not create it, so it is left alone: remove it (make cluster-down) or choose another CLUSTER_NAME", o.name, herr)
			}
			o.progress(fmt.Sprintf("kind cluster %q exists but its API server does not answer (%v): deleting and re-creating it", o.name, herr))
			if err := k.Delete(ctx); err != nil {
				return fmt.Errorf("replace unhealthy kind cluster %q: %w", o.name, err)
			}
			exists = false
		}
	}
	if exists {
		o.progress(fmt.Sprintf("kind cluster %q already exists: reusing it", o.name))
		// Two LoadBalancer implementations would both claim every Service
		// without a class. (set-up below starts the cloud LB afresh, with
		// this run's flags, whenever the run asks for it.)
		l, err := lb.FindKind(ctx, o.name, kindNetwork)
		if err != nil {
			return err
		}
		if o.metallb && l != nil && l.ClaimsUnclassed {
			return fmt.Errorf("kind cluster %q already runs the cloud LB taking every Service (container %s); not adding MetalLB to it: reuse it with LB=cloud, or remove it first (make cluster-down)", o.name, l.Container)
		}
		if err := k.kp.ExportKubeConfig(o.name, o.kubeconfig, false); err != nil {
			return fmt.Errorf("export kubeconfig of existing cluster %q: %w", o.name, err)
		}
	} else {
		if err := k.recordHostState(ctx); err != nil {
			return err
		}
		defer func() {
			if err == nil {
				return
			}
			if o.retain && ctx.Err() == nil {
				o.progress("create failed; keeping the cluster for debugging (remove it with `make cluster-down`)")
				return
			}
			o.progress("create failed or was interrupted: removing what it made")
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
			defer cancel()
			if derr := k.Delete(cctx); derr != nil {
				err = errors.Join(err, fmt.Errorf("clean-up after failed create: %w (run `make cluster-down`)", derr))
			}
		}()
		if err := k.createNodes(ctx); err != nil {
			return err
		}
	}
	return k.setUp(ctx)
}

// reuseWait bounds how long an existing cluster's API server gets to answer
// before it counts as broken: after a Docker daemon restart kind's nodes come
// back by themselves and the API server is usually up within a minute.
const reuseWait = 90 * time.Second

// answers waits up to timeout for the control-plane container to run and its
// API server to report /readyz.
func (k *Kind) answers(ctx context.Context, timeout time.Duration) error {
	cp := k.controlPlane()
	return retry(ctx, "the API server of "+cp+" to answer /readyz", timeout, 3*time.Second, func(ctx context.Context) error {
		running, err := docker(ctx, nil, "inspect", "-f", "{{.State.Running}}", cp)
		if err != nil {
			return err
		}
		if strings.TrimSpace(running) != "true" {
			return fmt.Errorf("container %s is not running", cp)
		}
		_, err = nodeExec(ctx, cp, nil, "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "get", "--raw", "/readyz", "--request-timeout=5s")
		return err
	})
}

func (k *Kind) recordHostState(ctx context.Context) error {
	o := &k.o
	st, err := loadState(o.stateDir, o.name)
	if err != nil {
		return err
	}
	if st != nil {
		// A previous create was not torn down: keep its record, which holds
		// the values from before any kubelet ran.
		return nil
	}
	sys, err := sysctlFS{root: "/proc/sys"}.read(hostSysctls)
	if err != nil {
		return fmt.Errorf("record host sysctls before kubelet changes them: %w", err)
	}
	// Another zerodrop cluster's kubelets may have changed them already; its
	// record holds the values from before any kubelet ran.
	others, err := otherStates(o.stateDir, o.name)
	if err != nil {
		return err
	}
	if len(others) > 0 && len(others[0].Sysctls) > 0 {
		sys = others[0].Sysctls
	}
	had, err := networkExists(ctx, kindNetwork)
	if err != nil {
		return fmt.Errorf("is docker reachable? %w", err)
	}
	return saveState(o.stateDir, &hostState{Cluster: o.name, Network: kindNetwork, NetworkCreated: !had, Sysctls: sys, Kubeconfig: o.kubeconfig})
}

func (k *Kind) createNodes(ctx context.Context) error {
	o := &k.o
	cfg, err := kindConfig(*o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.kubeconfig), 0o755); err != nil {
		return fmt.Errorf("create kubeconfig dir: %w", err)
	}
	o.progress(fmt.Sprintf("creating kind cluster %q: %d nodes from %s", o.name, len(cfg.Nodes), o.nodeImage))
	o.emit(zdv1.EventAction, "cluster/"+o.name, "create kind cluster", map[string]string{"image": o.nodeImage, "nodes": fmt.Sprint(len(cfg.Nodes))})
	done := make(chan error, 1)
	go func() {
		// kind's Create takes no context; it is waited for even when ctx
		// ends so the clean-up that follows sees every container it made.
		done <- k.kp.Create(o.name,
			kindcluster.CreateWithV1Alpha4Config(cfg),
			kindcluster.CreateWithNodeImage(o.nodeImage),
			kindcluster.CreateWithKubeconfigPath(o.kubeconfig),
			kindcluster.CreateWithWaitForReady(0),
			kindcluster.CreateWithDisplayUsage(false),
			kindcluster.CreateWithDisplaySalutation(false),
		)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("kind create cluster %q: %w", o.name, err)
		}
	case <-ctx.Done():
		o.progress("interrupted: waiting for kind to finish its current step before cleaning up")
		<-done
		return fmt.Errorf("kind create cluster %q: %w", o.name, ctx.Err())
	}
	return nil
}

func (k *Kind) clientset() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", k.o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", k.o.kubeconfig, err)
	}
	cfg.Timeout = 30 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// setUp installs and waits for the add-ons: flannel (nodes become Ready),
// CoreDNS, MetalLB with an address pool on the kind network.
func (k *Kind) setUp(ctx context.Context) error {
	o := &k.o
	cs, err := k.clientset()
	if err != nil {
		return err
	}
	cp := k.controlPlane()
	fl, err := flannelManifest(o.podSubnet)
	if err != nil {
		return err
	}
	hint := ""
	if len(o.kubeProxyGates) > 0 {
		hint = fmt.Sprintf("; it was given feature gates %s, and kube-proxy refuses a gate Kubernetes 1.%d does not know or a GA gate set against its locked default: check each against that release's feature gates", o.kubeProxyGates, o.kubeVersion.Minor)
	}
	o.progress("waiting for kube-proxy")
	if err := waitKubeProxy(ctx, cs, o.readyTimeout, kubeProxyStuck, hint); err != nil {
		return err
	}
	o.progress("installing flannel (host-gw)")
	if err := kubectlApply(ctx, cp, fl); err != nil {
		return fmt.Errorf("install flannel: %w", err)
	}
	if err := kube.New(cs).WaitDaemonSet(ctx, "kube-flannel", "kube-flannel-ds", o.readyTimeout); err != nil {
		return fmt.Errorf("flannel: %w", err)
	}
	o.progress("waiting for nodes to be Ready")
	if err := waitNodesReady(ctx, cs, o.readyTimeout); err != nil {
		return err
	}
	ns, err := k.Nodes(ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.Name
	}
	if err := k.fencePodNetwork(ctx, names...); err != nil {
		return err
	}
	pools := map[string]int{}
	for _, n := range ns {
		o.emit(zdv1.EventNodeAdded, "node/"+n.Name, "node Ready", map[string]string{"pool": n.Pool, "role": n.Role, "ip": n.InternalIP})
		if n.Pool != "" {
			pools[n.Pool]++
		}
	}
	for _, p := range o.pools {
		o.emit(zdv1.EventPoolAdded, "pool/"+p.Name, fmt.Sprintf("nodepool %s: %d nodes", p.Name, pools[p.Name]), map[string]string{"count": fmt.Sprint(pools[p.Name])})
	}
	o.progress("waiting for CoreDNS")
	if err := kube.New(cs).WaitRollout(ctx, "kube-system", "coredns", o.readyTimeout); err != nil {
		return fmt.Errorf("CoreDNS: %w", err)
	}
	if o.metallb {
		if err := k.installMetalLB(ctx, cs); err != nil {
			return err
		}
		if o.routerImage != "" {
			if err := k.startBGP(ctx); err != nil {
				return err
			}
		}
	}
	if o.lb == contract.LBAll && !o.noKubeVIP {
		if err := k.installKubeVIP(ctx, cs); err != nil {
			return err
		}
	}
	if runs, _ := o.cloudLB(); runs {
		if err := k.startCloudLB(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (k *Kind) installMetalLB(ctx context.Context, cs kubernetes.Interface) error {
	o := &k.o
	cp := k.controlPlane()
	o.progress("installing MetalLB (L2)")
	// --force-conflicts: on a cluster made before, the BGP mode's fix of
	// the BGPPeer schema (fixASNFormat) owns two of the CRD's fields; the
	// manifest takes them back and the fix runs again after it.
	apply := []string{"kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "apply", "--server-side", "--force-conflicts", "-f"}
	if _, err := nodeExec(ctx, cp, nil, "test", "-f", metallbManifestPath); err == nil {
		// The offline node image carries the manifest (make node-image).
		if _, err := nodeExec(ctx, cp, nil, append(apply, metallbManifestPath)...); err != nil {
			return fmt.Errorf("install MetalLB: %w", err)
		}
	} else {
		// Nothing is downloaded here: a node image without the manifest
		// (kind's stock image) needs it handed over as a file, which the
		// set-up (clusters/cluster.sh) fetches from the MetalLB module.
		if o.metallbManifest == "" {
			return fmt.Errorf("install MetalLB: node image %s has no %s and no manifest file was given: use the image `make node-image` builds (it carries MetalLB's manifest and images), pass --metallb-manifest FILE (MetalLB's config/manifests/metallb-native.yaml), or run with LB=cloud", o.nodeImage, metallbManifestPath)
		}
		m, err := os.ReadFile(o.metallbManifest)
		if err != nil {
			return fmt.Errorf("install MetalLB: %w", err)
		}
		if _, err := nodeExec(ctx, cp, bytes.NewReader(m), append(apply, "-")...); err != nil {
			return fmt.Errorf("install MetalLB from %s: %w", o.metallbManifest, err)
		}
	}
	if err := kube.New(cs).WaitRollout(ctx, "metallb-system", "controller", o.readyTimeout); err != nil {
		return fmt.Errorf("MetalLB: %w", err)
	}
	if err := kube.New(cs).WaitDaemonSet(ctx, "metallb-system", "speaker", o.readyTimeout); err != nil {
		return fmt.Errorf("MetalLB: %w", err)
	}
	nw, err := inspectNetwork(ctx, kindNetwork)
	if err != nil {
		return fmt.Errorf("MetalLB address pool: %w", err)
	}
	first, last, err := lbRange(nw.IPv4, o.lbAddressCount, lbBlock(o.name))
	if err != nil {
		return fmt.Errorf("MetalLB address pool: %w", err)
	}
	pool, err := metallbPoolManifest(first, last)
	if err != nil {
		return err
	}
	// The controller's validating webhook answers a little after the
	// deployment is available; retry until it accepts the pool.
	if err := retry(ctx, "MetalLB to accept the address pool", o.readyTimeout, 3*time.Second, func(ctx context.Context) error {
		return kubectlApply(ctx, cp, pool)
	}); err != nil {
		return err
	}
	o.progress(fmt.Sprintf("MetalLB pool %s-%s on docker network %s (%s)", first, last, kindNetwork, nw.IPv4))
	return nil
}

// fencePodNetwork keeps packets for the pod network on the nodes: each
// node gets an unreachable route for the whole pod subnet, behind the
// routes the CNI adds (a /32 per local Pod, a /24 per other node), so a
// packet kube-proxy still sends to a Pod that is gone (a stale conntrack
// entry's DNAT) meets "no route to host" on its node, as on a real
// cluster, instead of the node's default route, which leads through this
// machine to its own gateway (where whatever answers is not the cluster:
// measured, an HTTP 404 from the gateway's proxy, kept alive and reused
// for thousands of requests). Traffic stays on the project's containers.
func (k *Kind) fencePodNetwork(ctx context.Context, nodes ...string) error {
	for _, n := range nodes {
		if _, err := nodeExec(ctx, n, nil, "ip", "route", "replace", "unreachable", k.o.podSubnet); err != nil {
			return fmt.Errorf("node %s: route the pod subnet %s nowhere but the nodes: %w", n, k.o.podSubnet, err)
		}
	}
	return nil
}

// Delete implements Provider: the kind cluster's containers (those kind made
// and those AddNodePool made: they carry kind's cluster label), the docker
// network when this provider created it, the kubeconfig, and the host
// sysctls kubelet changed are restored.
func (k *Kind) Delete(ctx context.Context) error {
	// kind's own commands (docker rm, network rm) in the default class,
	// whatever the load runs in.
	return sched.Normal(func() error { return k.delete(ctx) })
}

func (k *Kind) delete(ctx context.Context) error {
	o := &k.o
	var errs []error
	if err := k.removeCloudLB(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := k.removeRouter(ctx); err != nil {
		errs = append(errs, err)
	}
	exists, err := k.exists()
	if err != nil {
		return err
	}
	if exists {
		o.progress(fmt.Sprintf("deleting kind cluster %q", o.name))
		if err := k.kp.Delete(o.name, o.kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("kind delete cluster %q: %w", o.name, err))
		}
		o.emit(zdv1.EventAction, "cluster/"+o.name, "deleted kind cluster", nil)
	}
	st, err := loadState(o.stateDir, o.name)
	if err != nil {
		errs = append(errs, err)
	}
	if st != nil {
		others, err := otherStates(o.stateDir, o.name)
		if err != nil {
			errs = append(errs, err)
		}
		if st.NetworkCreated {
			switch users, err := removeNetworkIfUnused(ctx, st.Network); {
			case err != nil:
				errs = append(errs, err)
			case users == 0:
				o.progress("removed docker network " + st.Network)
			default:
				// Another cluster joined the network this one created: it
				// is theirs to remove now, not an error of this teardown.
				heir, err := handOverNetwork(o.stateDir, others, st.Network)
				if err != nil {
					errs = append(errs, err)
				} else if heir != "" {
					o.progress(fmt.Sprintf("docker network %s still has %d container(s) attached: left for cluster %s to remove", st.Network, users, heir))
				} else {
					o.progress(fmt.Sprintf("docker network %s still has %d container(s) attached that no zerodrop cluster recorded: left in place", st.Network, users))
				}
			}
		}
		if len(others) > 0 {
			// Restoring under another cluster's running kubelets would pull
			// the host out from under them; the last one out restores.
			o.progress(fmt.Sprintf("host sysctls left as they are: %d other zerodrop cluster(s) still recorded (%s)", len(others), others[0].Cluster))
		} else {
			changed, err := sysctlFS{root: "/proc/sys"}.restore(st.Sysctls)
			if err != nil {
				errs = append(errs, err)
			}
			for _, c := range changed {
				o.progress("restored host sysctl " + c)
			}
		}
		if len(errs) == 0 {
			if err := removeState(o.stateDir, o.name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := removeEmptyKubeconfig(o.kubeconfig); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeNetworkIfUnused removes the network when no container is attached;
// otherwise it leaves it and says how many are.
func removeNetworkIfUnused(ctx context.Context, name string) (users int, err error) {
	ok, err := networkExists(ctx, name)
	if err != nil || !ok {
		return 0, err
	}
	out, err := docker(ctx, nil, "network", "inspect", "-f", "{{len .Containers}}", name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("docker network inspect %s: container count %q: %w", name, strings.TrimSpace(out), err)
	}
	if n > 0 {
		return n, nil
	}
	_, err = docker(ctx, nil, "network", "rm", name)
	return 0, err
}

// removeEmptyKubeconfig removes a kubeconfig file kind left without
// contexts; one still holding other clusters' contexts is kept.
func removeEmptyKubeconfig(path string) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return nil // not ours to judge
	}
	if len(cfg.Contexts) == 0 {
		return os.Remove(path)
	}
	return nil
}

// Nodes implements Provider, from the Kubernetes API.
func (k *Kind) Nodes(ctx context.Context) ([]Node, error) {
	cs, err := k.clientset()
	if err != nil {
		return nil, err
	}
	return listNodes(ctx, cs)
}

func listNodes(ctx context.Context, cs kubernetes.Interface) ([]Node, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]Node, 0, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		out = append(out, Node{Name: n.Name, Role: nodeRole(n), Pool: n.Labels[contract.PoolLabel], InternalIP: nodeIP(n), Ready: nodeReady(n)})
	}
	sortNodes(out)
	return out, nil
}

// LoadImages implements Provider: each image is saved once from the local
// Docker and streamed into every node's containerd.
func (k *Kind) LoadImages(ctx context.Context, images ...string) error {
	o := &k.o
	ns, err := k.kp.ListNodes(o.name)
	if err != nil {
		return fmt.Errorf("list nodes of %q: %w", o.name, err)
	}
	if len(ns) == 0 {
		return fmt.Errorf("kind cluster %q has no nodes (create it first)", o.name)
	}
	if err := k.loadInto(ctx, ns, images); err != nil {
		return err
	}
	// Nodes added later get them too, as a cloud node would pull them.
	return k.rememberImages(images)
}

// loadInto saves each image once from the local Docker and streams it into
// the given nodes' containerd.
func (k *Kind) loadInto(ctx context.Context, ns []nodes.Node, images []string) error {
	dir, err := os.MkdirTemp("", "zerodrop-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, img := range images {
		if err := ctx.Err(); err != nil {
			return err
		}
		tar := filepath.Join(dir, "image.tar")
		if _, err := docker(ctx, nil, "save", "-o", tar, img); err != nil {
			return fmt.Errorf("load image %s: %w (build it first)", img, err)
		}
		for _, n := range ns {
			if err := loadArchive(n, tar); err != nil {
				return fmt.Errorf("load image %s into node %s: %w", img, n.String(), err)
			}
		}
		k.o.emit(zdv1.EventAction, "image/"+img, fmt.Sprintf("loaded into %d nodes", len(ns)), nil)
	}
	return nil
}

// rememberImages records side-loaded images in the host state, so that
// AddNodePool, even from another process, loads them into new nodes.
func (k *Kind) rememberImages(images []string) error {
	st, err := loadState(k.o.stateDir, k.o.name)
	if err != nil || st == nil {
		return err
	}
	for _, img := range images {
		if !slices.Contains(st.Images, img) {
			st.Images = append(st.Images, img)
		}
	}
	return saveState(k.o.stateDir, st)
}

func (k *Kind) rememberedImages() ([]string, error) {
	st, err := loadState(k.o.stateDir, k.o.name)
	if err != nil || st == nil {
		return nil, err
	}
	return st.Images, nil
}

func loadArchive(n nodes.Node, tar string) error {
	f, err := os.Open(tar)
	if err != nil {
		return err
	}
	defer f.Close()
	return nodeutils.LoadImageArchive(n, f)
}
