# The versions of everything the offline cluster images are built from,
# written once (sourced by lib.sh and by clusters/cluster.sh). Each can be
# overridden from the environment.
#
# The default Kubernetes version is the one line below. To move it forward:
# probe the module proxy for the next release (`go list -m -json
# k8s.io/kubernetes@vX.Y.Z`; the proxy refuses `-versions`, so ask for exact
# versions, and `go mod download` must also pass the checksum database), then
# `KUBERNETES_VERSION=vX.Y.Z make node-image cluster e2e-smoke`, and when the
# smoke is green change this line (and harness/cluster's DefaultNodeImage).
# etcd, CoreDNS, pause and the Go toolchain follow from the release itself
# (lib.sh: k8s_versions), so nothing else needs editing.
KUBERNETES_DEFAULT_VERSION=v1.37.2
# KUBERNETES_VERSION is the knob; K8S_VERSION is its older name.
KUBERNETES_VERSION="${KUBERNETES_VERSION:-${K8S_VERSION:-$KUBERNETES_DEFAULT_VERSION}}"
K8S_VERSION="$KUBERNETES_VERSION"
METALLB_VERSION="${METALLB_VERSION:-v0.15.2}"
FLANNEL_VERSION="${FLANNEL_VERSION:-v0.27.4}"
# kube-vip (columns kube-vip-*). The checksum database has no entry for its
# module (sum.golang.org answers 404; the proxy serves it), so its module
# hash is pinned here, as `go mod download -json` reported it on 2026-11-29,
# and checked before anything is built from it.
KUBE_VIP_VERSION="${KUBE_VIP_VERSION:-v0.9.2}"
KUBE_VIP_SUM="${KUBE_VIP_SUM:-h1:LAvGmK34svcNhTxXNyDoV7s1bHYEgXrM3ff2FxfH6Us=}"
# kind's base-image files (images/base/files) are replayed on the node image;
# they come from the sigs.k8s.io/kind version go.mod pins, the same kind
# whose kubeadm config template the harness uses.
KIND_VERSION="${KIND_VERSION:-$(awk '$1 == "sigs.k8s.io/kind" {print $2}' "$(dirname "${BASH_SOURCE[0]}")/../../go.mod")}"
# The upstream router of MetalLB's BGP mode (harness/router): Debian
# bookworm's FRR, whatever version its apt sources carry on the day (8.4.4
# on 2026-11-28); the router image records the exact version it installed.
FRR_PACKAGE="${FRR_PACKAGE:-frr}"
# Traefik as the Pods behind the LB (the front cells, build-proxies.sh),
# built from its Go module; HAProxy comes from Debian bookworm's apt sources
# (2.6.12 on 2026-12-06), and its image records the version it installed.
TRAEFIK_VERSION="${TRAEFIK_VERSION:-v3.6.2}"
