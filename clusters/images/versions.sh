# The versions of everything the offline cluster images are built from,
# written once (sourced by lib.sh and by clusters/cluster.sh). Each can be
# overridden from the environment.
K8S_VERSION="${K8S_VERSION:-v1.34.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.5}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.12.1}"
METALLB_VERSION="${METALLB_VERSION:-v0.15.2}"
FLANNEL_VERSION="${FLANNEL_VERSION:-v0.27.4}"
KIND_VERSION="${KIND_VERSION:-v0.30.0}"
