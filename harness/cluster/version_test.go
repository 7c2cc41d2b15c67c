package cluster

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"zerodrop.dev/zerodrop/apis/contract"
)

func TestParseKubeVersion(t *testing.T) {
	for in, want := range map[string]kubeVersion{"v1.37.2": {Major: 1, Minor: 37}, "1.27": {Major: 1, Minor: 27}, " v1.35.0-rc.1\n": {Major: 1, Minor: 35}} {
		got, err := parseKubeVersion(in)
		if err != nil || got != want {
			t.Errorf("parseKubeVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "v1", "latest", "vX.Y.Z"} {
		if _, err := parseKubeVersion(bad); err == nil {
			t.Errorf("parseKubeVersion(%q) accepted", bad)
		}
	}
}

func TestKubeadmPatchesPerVersion(t *testing.T) {
	has := func(v kubeVersion) bool {
		return strings.Contains(strings.Join(kubeadmPatches(v, nil), "---"), "failCgroupV1: false")
	}
	if has(kubeVersion{Major: 1, Minor: 34}) || has(kubeVersion{Major: 1, Minor: 27}) || has(kubeVersion{}) {
		t.Error("failCgroupV1 written for a kubelet older than 1.35")
	}
	if !has(kubeVersion{Major: 1, Minor: 35}) || !has(kubeVersion{Major: 1, Minor: 37}) {
		t.Error("failCgroupV1: false missing for 1.35+ (their kubelet refuses cgroup v1 hosts by default)")
	}
	for _, p := range kubeadmPatches(kubeVersion{Major: 1, Minor: 37}, FeatureGates{"ProxyTerminatingEndpoints": false}) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(p), &m); err != nil {
			t.Errorf("patch is not YAML: %v\n%s", err, p)
		}
	}
}

func TestJoinConfigV1beta3(t *testing.T) {
	if got := kubeadmJoinAPI(kubeVersion{Major: 1, Minor: 27}); got != "kubeadm.k8s.io/v1beta3" {
		t.Fatalf("1.27 join API = %s", got)
	}
	if got := kubeadmJoinAPI(kubeVersion{Major: 1, Minor: 37}); got != "kubeadm.k8s.io/v1beta4" {
		t.Fatalf("1.37 join API = %s", got)
	}
	j := joinConfig{Endpoint: "zd-control-plane:6443", Token: "abcdef.0123456789abcdef", CAHash: "sha256:00", NodeName: "zd-pool-c-1",
		NodeIP: "172.18.0.9", ProviderID: "kind://docker/zd/zd-pool-c-1", Labels: map[string]string{contract.PoolLabel: "pool-c"},
		API: kubeadmJoinAPI(kubeVersion{Major: 1, Minor: 27})}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(j.render()), &m); err != nil {
		t.Fatalf("join config is not YAML: %v\n%s", err, j.render())
	}
	if m["apiVersion"] != "kubeadm.k8s.io/v1beta3" {
		t.Errorf("apiVersion = %v", m["apiVersion"])
	}
	args, ok := m["nodeRegistration"].(map[string]any)["kubeletExtraArgs"].(map[string]any)
	if !ok || args["node-ip"] != "172.18.0.9" || args["node-labels"] != "zerodrop.dev/pool=pool-c" {
		t.Errorf("v1beta3 kubeletExtraArgs must be a map: %v", m["nodeRegistration"])
	}
}

// TestDefaultNodeImageFollowsVersionsSh: the default Kubernetes version is
// written in clusters/images/versions.sh, which builds the image; the Go
// default must name the same version.
func TestDefaultNodeImageFollowsVersionsSh(t *testing.T) {
	data, err := os.ReadFile("../../clusters/images/versions.sh")
	if err != nil {
		t.Fatal(err)
	}
	var def string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "KUBERNETES_DEFAULT_VERSION="); ok {
			def = strings.TrimSpace(v)
		}
	}
	if def == "" {
		t.Fatal("clusters/images/versions.sh names no KUBERNETES_DEFAULT_VERSION")
	}
	if want := "zerodrop/kind-node:" + def; DefaultNodeImage != want {
		t.Errorf("DefaultNodeImage = %q, versions.sh builds %q: change both together", DefaultNodeImage, want)
	}
}
