package cluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

func TestParseFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", ""},
		{"ProxyTerminatingEndpoints=false", "ProxyTerminatingEndpoints=false"},
		{" B=true , A=false ,", "A=false,B=true"},
		{"A=false,A=0", "A=false"},
	} {
		g, err := ParseFeatureGates(tc.in)
		if err != nil || g.String() != tc.want {
			t.Errorf("ParseFeatureGates(%q) = %q, %v; want %q", tc.in, g.String(), err, tc.want)
		}
	}
	for _, bad := range []string{"ProxyTerminatingEndpoints", "proxyTerminating=false", "A=maybe", "A=true,A=false", "=true", "A B=true"} {
		if _, err := ParseFeatureGates(bad); err == nil {
			t.Errorf("ParseFeatureGates(%q) accepted", bad)
		}
	}
}

// TestKubeProxyGatesInKubeadmPatch: the gates land in the
// KubeProxyConfiguration kind writes for kube-proxy, as booleans.
func TestKubeProxyGatesInKubeadmPatch(t *testing.T) {
	g, err := ParseFeatureGates("ProxyTerminatingEndpoints=false")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, p := range kubeadmPatches(kubeVersion{Major: 1, Minor: 27}, g) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(p), &m); err != nil {
			t.Fatalf("patch is not YAML: %v\n%s", err, p)
		}
		if m["kind"] != "KubeProxyConfiguration" {
			continue
		}
		found = true
		fg, _ := m["featureGates"].(map[string]any)
		if v, ok := fg["ProxyTerminatingEndpoints"].(bool); !ok || v {
			t.Errorf("featureGates = %v; want ProxyTerminatingEndpoints: false", m["featureGates"])
		}
	}
	if !found {
		t.Fatal("no KubeProxyConfiguration patch")
	}
	for _, p := range kubeadmPatches(kubeVersion{Major: 1, Minor: 27}, nil) {
		if strings.Contains(p, "featureGates") {
			t.Errorf("featureGates written with none asked:\n%s", p)
		}
	}
}

func TestKubeProxyFeatureGatesFromConfigMap(t *testing.T) {
	ctx := context.Background()
	if _, ok, err := KubeProxyFeatureGates(ctx, fake.NewSimpleClientset()); ok || err != nil {
		t.Errorf("no ConfigMap: ok %v, err %v; want unknown, no error", ok, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy"},
		Data: map[string]string{"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nfeatureGates:\n  ProxyTerminatingEndpoints: false\n"}}
	g, ok, err := KubeProxyFeatureGates(ctx, fake.NewSimpleClientset(cm))
	if err != nil || !ok || g.String() != "ProxyTerminatingEndpoints=false" {
		t.Errorf("got %q, %v, %v", g.String(), ok, err)
	}
	cm.Data["config.conf"] = "kind: KubeProxyConfiguration\nmode: iptables\n"
	g, ok, err = KubeProxyFeatureGates(ctx, fake.NewSimpleClientset(cm))
	if err != nil || !ok || len(g) != 0 {
		t.Errorf("no gates: got %q, %v, %v", g.String(), ok, err)
	}
}
