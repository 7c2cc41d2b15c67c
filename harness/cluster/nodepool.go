package cluster

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kind/pkg/cluster/nodes"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kube"
)

var tokenRE = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// caCertHash is kubeadm's discovery hash of a CA certificate: sha256 of its
// DER SubjectPublicKeyInfo.
func caCertHash(caPEM []byte) (string, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("CA file holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("parse CA certificate: %w", err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// joinConfig is the kubeadm JoinConfiguration of one new worker, as kind
// writes for its own workers (node IP, provider ID, labels) but with a
// fresh bootstrap token and CA pinning.
type joinConfig struct {
	Endpoint   string
	Token      string
	CAHash     string
	NodeName   string
	NodeIP     string
	ProviderID string
	Labels     map[string]string
	Taints     []corev1.Taint
	// API is the kubeadm config API to write (kubeadmJoinAPI of the
	// cluster's version); v1beta3 takes kubeletExtraArgs as a map, v1beta4
	// as a list of name/value pairs.
	API string
}

func (j joinConfig) render() string {
	var b strings.Builder
	api := j.API
	if api == "" {
		api = "kubeadm.k8s.io/v1beta4"
	}
	fmt.Fprintf(&b, "apiVersion: %s\nkind: JoinConfiguration\n", api)
	fmt.Fprintf(&b, "discovery:\n  bootstrapToken:\n    apiServerEndpoint: %q\n    token: %q\n    caCertHashes:\n    - %q\n", j.Endpoint, j.Token, j.CAHash)
	fmt.Fprintf(&b, "nodeRegistration:\n  name: %q\n  criSocket: unix:///run/containerd/containerd.sock\n", j.NodeName)
	b.WriteString("  kubeletExtraArgs:\n")
	if api == "kubeadm.k8s.io/v1beta3" {
		fmt.Fprintf(&b, "    node-ip: %q\n", j.NodeIP)
		fmt.Fprintf(&b, "    provider-id: %q\n", j.ProviderID)
		fmt.Fprintf(&b, "    node-labels: %q\n", labelArg(j.Labels))
	} else {
		fmt.Fprintf(&b, "  - name: node-ip\n    value: %q\n", j.NodeIP)
		fmt.Fprintf(&b, "  - name: provider-id\n    value: %q\n", j.ProviderID)
		fmt.Fprintf(&b, "  - name: node-labels\n    value: %q\n", labelArg(j.Labels))
	}
	if len(j.Taints) == 0 {
		b.WriteString("  taints: []\n")
	} else {
		b.WriteString("  taints:\n")
		for _, t := range j.Taints {
			fmt.Fprintf(&b, "  - key: %q\n    value: %q\n    effect: %q\n", t.Key, t.Value, string(t.Effect))
		}
	}
	return b.String()
}

// nodeRunArgs are the docker run arguments of a new worker: kind's own
// flags for a node container, its cluster and role labels (so kind's delete
// removes it too) and ours naming the pool.
func nodeRunArgs(cluster, pool, name, image string) []string {
	return []string{
		"run", "--name", name, "--hostname", name,
		"--detach", "--tty",
		"--label", "io.x-k8s.kind.cluster=" + cluster,
		"--label", "io.x-k8s.kind.role=worker",
		"--label", "dev.zerodrop.pool=" + pool,
		"--net", kindNetwork,
		"--restart=on-failure:1", "--init=false", "--cgroupns=private",
		"--privileged",
		"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		"--tmpfs", "/tmp", "--tmpfs", "/run",
		"--volume", "/var", "--volume", "/lib/modules:/lib/modules:ro",
		"-e", "KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER",
		image,
	}
}

// AddNodePool implements Provider: count new node containers from the
// control plane's image join the cluster with a fresh bootstrap token, as a
// cloud nodepool scale-up does. On failure the new containers and Node
// objects are removed again.
func (k *Kind) AddNodePool(ctx context.Context, name string, count int, labels map[string]string, taints []corev1.Taint) (err error) {
	o := &k.o
	if err := validatePool(name, count); err != nil {
		return err
	}
	cs, err := k.clientset()
	if err != nil {
		return err
	}
	existing, err := poolNodes(ctx, cs, name)
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		return fmt.Errorf("nodepool %q already has nodes (%s); remove it first or pick another name", name, strings.Join(existing, ", "))
	}
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-%d", o.name, name, i+1)
	}
	o.progress(fmt.Sprintf("adding nodepool %s: %d nodes", name, count))
	o.emit(zdv1.EventAction, "pool/"+name, fmt.Sprintf("add nodepool %s with %d nodes", name, count), nil)
	if err := k.joinNew(ctx, cs, name, names, labels, taints); err != nil {
		return fmt.Errorf("add nodepool %s: %w", name, err)
	}
	o.emit(zdv1.EventPoolAdded, "pool/"+name, fmt.Sprintf("nodepool %s: %d nodes Ready", name, count), map[string]string{"count": fmt.Sprint(count)})
	return nil
}

// joinNew starts a node container for each of names from the control
// plane's image and joins it to the cluster in pool with a fresh bootstrap
// token, waits until every one is Ready, and says so with a node-added
// event each. On failure the new containers and Node objects are removed
// again.
func (k *Kind) joinNew(ctx context.Context, cs kubernetes.Interface, pool string, names []string, labels map[string]string, taints []corev1.Taint) (err error) {
	o := &k.o
	for _, n := range names {
		if _, ierr := docker(ctx, nil, "inspect", "-f", "{{.Id}}", n); ierr == nil {
			return fmt.Errorf("container %s already exists; remove it (docker rm -f -v %s) or pick another name", n, n)
		}
	}
	cp := k.controlPlane()
	image, err := docker(ctx, nil, "inspect", "-f", "{{.Config.Image}}", cp)
	if err != nil {
		return fmt.Errorf("find the control plane's node image: %w", err)
	}
	image = strings.TrimSpace(image)
	vs, err := nodeExec(ctx, cp, nil, "cat", "/kind/version")
	if err != nil {
		return fmt.Errorf("read the control plane's Kubernetes version (/kind/version): %w", err)
	}
	kv, err := parseKubeVersion(vs)
	if err != nil {
		return fmt.Errorf("control plane /kind/version: %w", err)
	}
	tok, err := nodeExec(ctx, cp, nil, "kubeadm", "token", "create", "--ttl", "30m", "--description", "zerodrop nodepool "+pool)
	if err != nil {
		return fmt.Errorf("create bootstrap token: %w", err)
	}
	tok = strings.TrimSpace(tok)
	if !tokenRE.MatchString(tok) {
		return fmt.Errorf("kubeadm token create printed %q, not a bootstrap token", tok)
	}
	caPEM, err := nodeExec(ctx, cp, nil, "cat", "/etc/kubernetes/pki/ca.crt")
	if err != nil {
		return fmt.Errorf("read cluster CA: %w", err)
	}
	hash, err := caCertHash([]byte(caPEM))
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		for _, n := range names {
			_, _ = docker(cctx, nil, "rm", "-f", "-v", n)
			_ = cs.CoreV1().Nodes().Delete(cctx, n, metav1.DeleteOptions{})
		}
	}()

	all := poolLabels(pool, labels)
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.joinNode(ctx, joinConfig{
				Endpoint: cp + ":6443", Token: tok, CAHash: hash, NodeName: n,
				ProviderID: "kind://docker/" + o.name + "/" + n, Labels: all, Taints: taints,
				API: kubeadmJoinAPI(kv),
			}, pool, image)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := k.loadRemembered(ctx, names); err != nil {
		return err
	}
	if err := waitNodesReady(ctx, cs, o.readyTimeout, names...); err != nil {
		return err
	}
	if err := k.fencePodNetwork(ctx, names...); err != nil {
		return err
	}
	// A Ready node serves only once its DaemonSets run: kube-proxy's
	// rules, the CNI's routes, MetalLB's speaker. Measured: a replaced
	// node the next batch's Pods landed on before that timed out new
	// connections for 1-2 s under every column (2026-11-28).
	if err := waitKubeProxy(ctx, cs, o.readyTimeout, kubeProxyStuck, ""); err != nil {
		return err
	}
	kc := kube.New(cs)
	if err := kc.WaitDaemonSet(ctx, "kube-flannel", "kube-flannel-ds", o.readyTimeout); err != nil {
		return err
	}
	if o.metallb {
		if err := kc.WaitDaemonSet(ctx, "metallb-system", "speaker", o.readyTimeout); err != nil {
			return err
		}
	}
	for _, n := range names {
		o.emit(zdv1.EventNodeAdded, "node/"+n, "node joined and Ready", map[string]string{"pool": pool})
	}
	return nil
}

func (k *Kind) joinNode(ctx context.Context, j joinConfig, pool, image string) error {
	o := &k.o
	if _, err := docker(ctx, nil, nodeRunArgs(o.name, pool, j.NodeName, image)...); err != nil {
		return fmt.Errorf("start node container %s: %w", j.NodeName, err)
	}
	if err := retry(ctx, "containerd in "+j.NodeName, 2*time.Minute, time.Second, func(ctx context.Context) error {
		out, err := nodeExec(ctx, j.NodeName, nil, "systemctl", "is-active", "containerd")
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(out); s != "active" {
			return fmt.Errorf("containerd is %s", s)
		}
		return nil
	}); err != nil {
		return err
	}
	ip, err := containerIPv4(ctx, j.NodeName, kindNetwork)
	if err != nil {
		return err
	}
	j.NodeIP = ip
	if _, err := nodeExec(ctx, j.NodeName, strings.NewReader(j.render()), "sh", "-c", "cat >/kind/zerodrop-join.yaml"); err != nil {
		return fmt.Errorf("write join config on %s: %w", j.NodeName, err)
	}
	// Preflight is skipped as kind does for its own nodes: its checks
	// (swap, kernel config, system verification) do not fit a container.
	if _, err := nodeExec(ctx, j.NodeName, nil, "kubeadm", "join", "--config", "/kind/zerodrop-join.yaml", "--skip-phases=preflight", "--v=1"); err != nil {
		return fmt.Errorf("kubeadm join on %s: %w", j.NodeName, err)
	}
	return nil
}

// loadRemembered loads the images earlier LoadImages calls side-loaded into
// the named new nodes.
func (k *Kind) loadRemembered(ctx context.Context, names []string) error {
	images, err := k.rememberedImages()
	if err != nil || len(images) == 0 {
		return err
	}
	all, err := k.kp.ListNodes(k.o.name)
	if err != nil {
		return fmt.Errorf("list nodes of %q: %w", k.o.name, err)
	}
	var fresh []nodes.Node
	for _, n := range all {
		if slices.Contains(names, n.String()) {
			fresh = append(fresh, n)
		}
	}
	if len(fresh) != len(names) {
		return fmt.Errorf("found %d of the new node containers %v", len(fresh), names)
	}
	k.o.progress(fmt.Sprintf("loading %d side-loaded image(s) into the new nodes", len(images)))
	return k.loadInto(ctx, fresh, images)
}

func poolNodes(ctx context.Context, cs kubernetes.Interface, pool string) ([]string, error) {
	return kube.New(cs).NodesInPool(ctx, pool)
}

// RemoveNodePool implements Provider: each node is cordoned and drained
// (evictions honour PodDisruptionBudgets and grace periods), its Node object
// deleted and its container destroyed, one node at a time as a cloud
// nodepool deletion does.
func (k *Kind) RemoveNodePool(ctx context.Context, name string) error {
	o := &k.o
	if name == "" {
		return errors.New("nodepool name is empty")
	}
	cs, err := k.clientset()
	if err != nil {
		return err
	}
	names, err := poolNodes(ctx, cs, name)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("nodepool %q has no nodes (label %s=%s)", name, contract.PoolLabel, name)
	}
	o.progress(fmt.Sprintf("removing nodepool %s: %s", name, strings.Join(names, ", ")))
	o.emit(zdv1.EventAction, "pool/"+name, "remove nodepool "+name, map[string]string{"nodes": strings.Join(names, ",")})
	for _, n := range names {
		if err := drainNode(ctx, cs, &k.o, n); err != nil {
			return fmt.Errorf("remove nodepool %s: %w", name, err)
		}
		if err := cs.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove nodepool %s: delete node %s: %w", name, n, err)
		}
		if _, err := docker(ctx, nil, "rm", "-f", "-v", n); err != nil {
			return fmt.Errorf("remove nodepool %s: remove container: %w", name, err)
		}
		o.emit(zdv1.EventNodeRemoved, "node/"+n, "node deleted and its machine destroyed", map[string]string{"pool": name})
	}
	o.emit(zdv1.EventPoolRemoved, "pool/"+name, fmt.Sprintf("nodepool %s removed (%d nodes)", name, len(names)), nil)
	return nil
}

// drainNode cordons and drains one node that is about to be destroyed.
func drainNode(ctx context.Context, cs kubernetes.Interface, o *options, node string) error {
	res := kube.New(cs, kube.WithEventSink(o.sink)).Drain(ctx, node, o.drainTimeout, kube.Force())
	if !res.Completed {
		return res.Err
	}
	return nil
}
