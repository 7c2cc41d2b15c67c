package suites

import (
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/internal/kubeversion"
)

// KubeProxy is what the suite knows of the cluster's kube-proxy: its
// release and the feature gates it was given (read back from
// kube-system/kube-proxy when the session opens).
type KubeProxy struct {
	Version kubeversion.Version
	Gates   cluster.FeatureGates
}

// terminatingGate is KEP-1669's kube-proxy feature gate.
const terminatingGate = "ProxyTerminatingEndpoints"

// ProxiesTerminating reports whether kube-proxy sends a new connection to
// an endpoint that is terminating but still serving when no ready one is
// where it looks: with externalTrafficPolicy Local, the node's own (v1.27.4
// pkg/proxy/topology.go CategorizeEndpoints). Its release decides, and the
// gate where the release lets it (kubeversion.Version.ProxiesTerminatingLocked).
func (k KubeProxy) ProxiesTerminating() bool {
	if k.Version.ProxiesTerminatingLocked() {
		return true
	}
	if on, set := k.Gates[terminatingGate]; set {
		return on
	}
	return k.Version.ProxiesTerminatingByDefault()
}

// withoutTerminatingEndpoints picks clusters whose kube-proxy does not
// proxy terminating endpoints (a Limit's Proxy).
func withoutTerminatingEndpoints(k KubeProxy) bool { return !k.ProxiesTerminating() }
