package cluster

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// FeatureGates are Kubernetes feature gates by name, as a component's
// --feature-gates flag and its configuration file's featureGates take them.
type FeatureGates map[string]bool

// gateName is the shape of every gate in k8s.io/kubernetes
// pkg/features/kube_features.go: an exported Go identifier.
var gateName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// ParseFeatureGates reads "Name=false,Other=true" (the --feature-gates
// syntax; spaces around items ignored). The empty string is no gates.
func ParseFeatureGates(s string) (FeatureGates, error) {
	g := FeatureGates{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, val, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("feature gate %q: want Name=true or Name=false", item)
		}
		name = strings.TrimSpace(name)
		if !gateName.MatchString(name) {
			return nil, fmt.Errorf("feature gate %q: a gate's name is a Go identifier starting upper case, like ProxyTerminatingEndpoints", name)
		}
		val = strings.TrimSpace(val)
		on, err := strconv.ParseBool(val)
		if err != nil {
			return nil, fmt.Errorf("feature gate %s=%s: want true or false", name, val)
		}
		if prev, dup := g[name]; dup && prev != on {
			return nil, fmt.Errorf("feature gate %s is set both true and false", name)
		}
		g[name] = on
	}
	return g, nil
}

// String is the --feature-gates form, sorted: "A=false,B=true".
func (g FeatureGates) String() string {
	parts := make([]string, 0, len(g))
	for _, n := range slices.Sorted(maps.Keys(g)) {
		parts = append(parts, fmt.Sprintf("%s=%t", n, g[n]))
	}
	return strings.Join(parts, ",")
}

// KubeProxyFeatureGates reads the feature gates kube-proxy's configuration
// sets, from the ConfigMap kubeadm writes it (kube-system/kube-proxy, key
// config.conf: a KubeProxyConfiguration; k8s.io/kubernetes
// cmd/kubeadm/app/phases/addons/proxy). A cluster without that ConfigMap
// (not set up by kubeadm, or no kube-proxy) gives ok false: its gates are
// unknown, not "none".
func KubeProxyFeatureGates(ctx context.Context, cs kubernetes.Interface) (g FeatureGates, ok bool, err error) {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read kube-system/kube-proxy: %w", err)
	}
	conf, found := cm.Data["config.conf"]
	if !found {
		return nil, false, nil
	}
	var c struct {
		FeatureGates map[string]bool `json:"featureGates"`
	}
	if err := yaml.Unmarshal([]byte(conf), &c); err != nil {
		return nil, false, fmt.Errorf("kube-system/kube-proxy config.conf: %w", err)
	}
	return FeatureGates(c.FeatureGates), true, nil
}
