package cluster

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"zerodrop.dev/zerodrop/apis/contract"
)

// kindConfig is the kind cluster for a topology: one control plane and the
// workers of every pool, each labelled with its pool. The default CNI
// (kindnetd) is off: flannel is installed instead. o.kubeVersion is the node
// image's Kubernetes version (zero: patches for the oldest supported).
func kindConfig(o options) (*v1alpha4.Cluster, error) {
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:     o.name,
		Networking: v1alpha4.Networking{
			DisableDefaultCNI: true,
			PodSubnet:         o.podSubnet,
			KubeProxyMode:     v1alpha4.IPTablesProxyMode,
			IPFamily:          v1alpha4.IPv4Family,
		},
		KubeadmConfigPatches: kubeadmPatches(o.kubeVersion, o.kubeProxyGates),
	}
	cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.ControlPlaneRole, Image: o.nodeImage})
	seen := map[string]bool{}
	for _, p := range o.pools {
		if err := validatePool(p.Name, p.Count); err != nil {
			return nil, err
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("nodepool %q listed twice", p.Name)
		}
		seen[p.Name] = true
		labels := poolLabels(p.Name, p.Labels)
		var patches []string
		if len(p.Taints) > 0 {
			patches = append(patches, joinTaintPatch(p))
		}
		for i := 0; i < p.Count; i++ {
			cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{
				Role: v1alpha4.WorkerRole, Image: o.nodeImage, Labels: labels,
				KubeadmConfigPatches: patches,
			})
		}
	}
	return cfg, nil
}

// poolLabels merges the pool label over the caller's labels (the pool label
// always wins: it is how the harness finds a pool's nodes).
func poolLabels(pool string, extra map[string]string) map[string]string {
	l := make(map[string]string, len(extra)+1)
	for k, v := range extra {
		l[k] = v
	}
	l[contract.PoolLabel] = pool
	return l
}

// joinTaintPatch registers a kind-created worker with the pool's taints.
func joinTaintPatch(p Pool) string {
	var b strings.Builder
	b.WriteString("kind: JoinConfiguration\nnodeRegistration:\n  taints:\n")
	for _, t := range p.Taints {
		fmt.Fprintf(&b, "  - key: %q\n    value: %q\n    effect: %q\n", t.Key, t.Value, string(t.Effect))
	}
	return b.String()
}

// labelArg renders labels as kubelet's --node-labels value, sorted so the
// output is stable.
func labelArg(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}
