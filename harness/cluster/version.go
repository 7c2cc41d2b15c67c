package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"zerodrop.dev/zerodrop/internal/kubeversion"
)

// kubeVersion is a Kubernetes release's major and minor, enough to pick the
// kubeadm and kubelet configuration a node image's version understands.
type kubeVersion = kubeversion.Version

// parseKubeVersion reads "v1.37.2" (or "1.37", "v1.37.2-rc.0").
func parseKubeVersion(s string) (kubeVersion, error) { return kubeversion.Parse(s) }

// nodeImageVersion is the Kubernetes version a kind node image carries in
// /kind/version (what kind itself reads to choose its kubeadm config:
// sigs.k8s.io/kind pkg/cluster/nodeutils KubeVersion). It runs a throwaway
// container from the local image; nothing is pulled.
func nodeImageVersion(ctx context.Context, image string) (kubeVersion, string, error) {
	out, err := docker(ctx, nil, "run", "--rm", "--pull=never", "--entrypoint", "cat", image, "/kind/version")
	if err != nil {
		return kubeVersion{}, "", fmt.Errorf("read /kind/version from node image %s: %w", image, err)
	}
	s := strings.TrimSpace(out)
	v, err := parseKubeVersion(s)
	return v, s, err
}

// kubeadmPatches adjust kind's generated kubeadm config for these hosts and
// for the node image's Kubernetes version v:
//   - nf_conntrack_max cannot be written from a node's network namespace, so
//     kube-proxy must not try (maxPerCore 0 leaves it alone).
//   - From v1.35 kubelet refuses cgroup v1 hosts by default (failCgroupV1
//     defaults to true: k8s.io/kubernetes v1.35.8 and v1.37.2
//     pkg/kubelet/apis/config/v1beta1/defaults.go SetDefaults_KubeletConfiguration;
//     false up to v1.34.2; the check is validateKubeletOSConfiguration in
//     pkg/kubelet/apis/config/validation/validation_linux.go). Hosts with a
//     cgroup v1 hierarchy (this project's CI machines) need it off; on a
//     cgroup v2 host the setting changes nothing. Older kubelets do not know
//     the field, so it is only written where the default is true.
//   - gates are kube-proxy feature gates the caller chose (WithKubeProxyFeatureGates).
func kubeadmPatches(v kubeVersion, gates FeatureGates) []string {
	proxy := `kind: KubeProxyConfiguration
apiVersion: kubeproxy.config.k8s.io/v1alpha1
mode: iptables
conntrack:
  maxPerCore: 0
`
	if len(gates) > 0 {
		proxy += "featureGates:\n"
		for _, name := range slices.Sorted(maps.Keys(gates)) {
			proxy += fmt.Sprintf("  %s: %t\n", name, gates[name])
		}
	}
	p := []string{proxy}
	if v.AtLeast(1, 35) {
		p = append(p, `kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
failCgroupV1: false
`)
	}
	return p
}

// kubeadmJoinAPI is the kubeadm config API a JoinConfiguration for version v
// is written in. v1beta4 exists from kubeadm v1.31 (k8s.io/kubernetes
// cmd/kubeadm/app/apis/kubeadm/v1beta4/doc.go, "v1.31: ... structured extra
// arguments"), and v1beta3 is gone by v1.37 (v1.37.2 ships only v1beta4 and
// v1 under cmd/kubeadm/app/apis/kubeadm/).
func kubeadmJoinAPI(v kubeVersion) string {
	if v.AtLeast(1, 31) {
		return "kubeadm.k8s.io/v1beta4"
	}
	return "kubeadm.k8s.io/v1beta3"
}
