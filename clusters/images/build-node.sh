#!/usr/bin/env bash
# Builds every image a zerodrop kind cluster needs, offline, and the kind node
# image with all of them preloaded into its containerd:
#
#   registry.k8s.io/kube-{apiserver,controller-manager,scheduler}:$K8S  FROM scratch
#   registry.k8s.io/kube-proxy:$K8S          Debian rootfs (iptables, conntrack)
#   registry.k8s.io/etcd, coredns/coredns, pause: the tags $K8S's kubeadm
#     wants (lib.sh k8s_versions reads them from its constants.go)
#   ghcr.io/flannel-io/flannel:v0.27.4       Debian rootfs (flannel calls iptables)
#   quay.io/metallb/{controller,speaker}:v0.15.2
#   zerodrop/kind-node:$K8S                  Debian rootfs + kind's base-image files
#
# $K8S is KUBERNETES_VERSION (versions.sh has the default).
#
# Upstream names are kept so that the same manifests work with pulled images.
# Every output is keyed by its inputs; a warm run only checks keys.
# Prints the node image reference on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export ZERODROP_START_SECONDS="${ZERODROP_START_SECONDS:-$SECONDS}"
. "$here/lib.sh"

NODE_REPO="${NODE_REPO:-zerodrop/kind-node}"
export DOCKER_BUILDKIT=0 # only the legacy builder exists with Debian's dockerd; it never pulls FROM scratch or local images

k8s_versions
"$here/build-k8s.sh"
"$here/build-rootfs.sh"
"$here/build-components.sh" pause etcd metallb flannel coredns kube-vip

kbin="$(cat "$CACHE/bin/kubernetes-$K8S_VERSION.path")"
rootfs="$(cat "$CACHE/rootfs/current.path")"
bin_of() { cat "$CACHE/bin/$1.path"; }
etcd_dir="$(bin_of "etcd-$ETCD_VERSION")"
coredns_dir="$(bin_of "coredns-$COREDNS_VERSION")"
metallb_dir="$(bin_of "metallb-$METALLB_VERSION")"
flannel_dir="$(bin_of "flannel-$FLANNEL_VERSION")"
kube_vip_dir="$(bin_of "kube-vip-$KUBE_VIP_VERSION")"
pause_dir="$(bin_of "pause-$PAUSE_VERSION")"
kind_dir="$(mod_dir "sigs.k8s.io/kind@$KIND_VERSION")"
[ -d "$kind_dir/images/base/files" ] || die "kind $KIND_VERSION module has no images/base/files (looked in $kind_dir)"
script_sum="$(cat "$0" | sha256sum | cut -c1-16)"

label_of() { docker image inspect -f '{{index .Config.Labels "dev.zerodrop.key"}}' "$1" 2>/dev/null || true; }

# image TAG KEY DOCKERFILE-TEXT FILE...: builds TAG from a temporary context
# holding FILEs (copied flat) unless TAG already carries KEY.
image() {
  local tag="$1" k="$2" df="$3"; shift 3
  if [ "$(label_of "$tag")" = "$k" ]; then log "image $tag: cached"; return 0; fi
  local ctx; ctx="$(mktemp -d "$CACHE/ctx.XXXXXX")"
  local f; for f in "$@"; do cp -a "$f" "$ctx/"; done
  printf '%s\nLABEL dev.zerodrop.key=%s\n' "$df" "$k" >"$ctx/Dockerfile"
  local old; old="$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)"
  step "image-$(echo "$tag" | tr '/:' '__')" docker build -q -t "$tag" "$ctx"
  rm -rf "$ctx"
  drop_if_dangling "$old"
}

# drop_if_dangling ID: removes an image this script built before and that no
# tag names any more, so rebuilds do not pile up.
drop_if_dangling() {
  [ -n "$1" ] || return 0
  local tags; tags="$(docker image inspect -f '{{len .RepoTags}}' "$1" 2>/dev/null || echo x)"
  if [ "$tags" = 0 ]; then docker rmi "$1" >/dev/null 2>&1 || true; fi
}

# --- the shared Debian base -------------------------------------------------
base_key="$(basename "$rootfs" .tar)"
BASE="zerodrop/debian-base:$base_key"
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  step import-rootfs docker import "$rootfs" "$BASE"
fi

PATH_ENV='ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin'
ks() { key "$@" "$script_sum"; }

images=()
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  image "registry.k8s.io/$c:$K8S_VERSION" "$(ks "$c" "$kbin")" \
    "FROM scratch
$PATH_ENV
COPY $c /usr/local/bin/$c
ENTRYPOINT [\"/usr/local/bin/$c\"]" "$kbin/$c"
  images+=("registry.k8s.io/$c:$K8S_VERSION")
done
image "registry.k8s.io/kube-proxy:$K8S_VERSION" "$(ks kube-proxy "$kbin" "$BASE")" \
  "FROM $BASE
COPY kube-proxy /usr/local/bin/kube-proxy
ENTRYPOINT [\"/usr/local/bin/kube-proxy\"]" "$kbin/kube-proxy"
images+=("registry.k8s.io/kube-proxy:$K8S_VERSION")

etcd_tag="registry.k8s.io/etcd:$ETCD_TAG"
image "$etcd_tag" "$(ks etcd "$etcd_dir")" \
  "FROM scratch
$PATH_ENV
COPY etcd /usr/local/bin/etcd
ENTRYPOINT [\"/usr/local/bin/etcd\"]" "$etcd_dir/etcd"
images+=("$etcd_tag")

image "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" "$(ks coredns "$coredns_dir")" \
  "FROM scratch
COPY coredns /coredns
EXPOSE 53 53/udp
ENTRYPOINT [\"/coredns\"]" "$coredns_dir/coredns"
images+=("registry.k8s.io/coredns/coredns:$COREDNS_VERSION")

# kind's containerd config names its own sandbox image (pause:3.10 in kind
# v0.30 to v0.33, images/base/files/etc/containerd/config.toml); node-setup.sh
# points it at the one kubeadm wants, so only that tag is needed.
pause_tag="registry.k8s.io/pause:$PAUSE_VERSION"
image "$pause_tag" "$(ks pause "$pause_dir")" \
  "FROM scratch
COPY pause /pause
ENTRYPOINT [\"/pause\"]" "$pause_dir/pause"
images+=("$pause_tag")

for c in controller speaker; do
  image "quay.io/metallb/$c:$METALLB_VERSION" "$(ks "metallb-$c" "$metallb_dir")" \
    "FROM scratch
COPY $c /$c
ENTRYPOINT [\"/$c\"]" "$metallb_dir/$c"
  images+=("quay.io/metallb/$c:$METALLB_VERSION")
done

image "ghcr.io/flannel-io/flannel:$FLANNEL_VERSION" "$(ks flannel "$flannel_dir" "$BASE")" \
  "FROM $BASE
COPY flannel /opt/bin/flanneld
ENTRYPOINT [\"/opt/bin/flanneld\"]" "$flannel_dir/flannel"
images+=("ghcr.io/flannel-io/flannel:$FLANNEL_VERSION")

# kube-vip as upstream's Dockerfile makes it: one static binary, FROM
# scratch (kube-vip/kube-vip v0.9.2 Dockerfile).
image "ghcr.io/kube-vip/kube-vip:$KUBE_VIP_VERSION" "$(ks kube-vip "$kube_vip_dir")" \
  "FROM scratch
COPY kube-vip /kube-vip
ENTRYPOINT [\"/kube-vip\"]" "$kube_vip_dir/kube-vip"
images+=("ghcr.io/kube-vip/kube-vip:$KUBE_VIP_VERSION")

# --- the node image -----------------------------------------------------------
image_ids="$(docker image inspect -f '{{.Id}}' "${images[@]}" | sha256sum | cut -c1-16)"
node_key="$(ks node "$K8S_VERSION" "$BASE" "$kbin" "$kind_dir" "$image_ids" "$metallb_dir" "$(cat "$here/node/"*)")"
NODE="$NODE_REPO:$K8S_VERSION-$node_key"
if [ "$(label_of "$NODE")" = "$node_key" ]; then
  log "node image $NODE: cached"
else
  # Stage 1: kind's base-image steps replayed on the Debian rootfs.
  ctx="$(mktemp -d "$CACHE/ctx.XXXXXX")"
  cp -a "$kind_dir/images/base/files" "$ctx/files"
  chmod -R u+w "$ctx/files"
  cp "$kbin/kubelet" "$kbin/kubeadm" "$kbin/kubectl" "$ctx/"
  cp "$metallb_dir/metallb-native.yaml" "$ctx/"
  cp "$here/node/"* "$ctx/"
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE
COPY files/usr/local/bin/ /usr/local/bin/
COPY files/kind/ /kind/
COPY files/etc/ /etc/
COPY kubelet kubeadm kubectl /usr/bin/
COPY metallb-native.yaml /kind/manifests/metallb-native.yaml
COPY node-setup.sh /kind/zerodrop-node-setup.sh
RUN bash /kind/zerodrop-node-setup.sh $K8S_VERSION $pause_tag && rm /kind/zerodrop-node-setup.sh
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]
DOCKERFILE
  step "node-$K8S_VERSION-stage1" docker build -q -t "$NODE_REPO:stage1" "$ctx"
  rm -rf "$ctx"

  # Stage 2: preload every image into the node's containerd, as kind's
  # node-image build does: a build container running containerd, images
  # streamed in through ctr (no unpack: the snapshots are made per node).
  bc="zerodrop-node-build-$$"
  cleanup_bc() { docker rm -f -v "$bc" >/dev/null 2>&1 || true; }
  trap cleanup_bc EXIT
  docker run -d --name "$bc" --privileged --entrypoint sleep "$NODE_REPO:stage1" infinity >/dev/null
  docker exec "$bc" bash -c 'nohup containerd >/var/log/containerd-build.log 2>&1 &'
  for i in $(seq 1 60); do
    docker exec "$bc" ctr version >/dev/null 2>&1 && break
    [ "$i" -lt 60 ] || die "containerd in the build container did not answer within 60 s"
    sleep 1
  done
  preload() {
    docker save "${images[@]}" | docker exec -i "$bc" ctr --namespace=k8s.io images import \
      --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests -
  }
  step "node-$K8S_VERSION-preload" preload
  docker exec "$bc" ctr --namespace=k8s.io images list -q >"$CACHE/logs/node-images-$K8S_VERSION.txt"
  for img in "${images[@]}"; do
    grep -qx "$img" "$CACHE/logs/node-images-$K8S_VERSION.txt" || grep -qx "docker.io/$img" "$CACHE/logs/node-images-$K8S_VERSION.txt" \
      || die "image $img missing from the node's containerd after import (have: $(tr '\n' ' ' <"$CACHE/logs/node-images-$K8S_VERSION.txt"))"
  done
  # PID 1 of the build container is sleep, which never reaps: a stopped
  # containerd stays a zombie, so wait for no live (non-Z) containerd.
  docker exec "$bc" bash -c 'pkill -x containerd; for i in $(seq 1 30); do ps -C containerd -o stat= | grep -qv "^Z" || exit 0; sleep 1; done; exit 1' \
    || die "containerd in the build container did not stop"
  docker exec "$bc" rm -f /var/log/containerd-build.log
  old_node="$(docker image inspect -f '{{.Id}}' "$NODE_REPO:$K8S_VERSION" 2>/dev/null || true)"
  step "node-$K8S_VERSION-commit" docker commit \
    --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change 'ENV container=docker' \
    --change "LABEL dev.zerodrop.key=$node_key" \
    --change "LABEL dev.zerodrop.kubernetes-version=$K8S_VERSION" \
    "$bc" "$NODE"
  cleanup_bc; trap - EXIT
  docker rmi "$NODE_REPO:stage1" >/dev/null 2>&1 || true
  log "node image $NODE: built ($(docker image inspect -f '{{.Size}}' "$NODE" | awk '{printf "%.0f MB", $1/1e6}'))"
fi
docker tag "$NODE" "$NODE_REPO:$K8S_VERSION"
drop_if_dangling "${old_node:-}"
# Older keyed node images of this version go too (other versions' stay);
# docker refuses (and we ignore) the ones a container still runs from.
for t in $(docker images "$NODE_REPO" --format '{{.Repository}}:{{.Tag}}'); do
  case "$t" in "$NODE"|"$NODE_REPO:$K8S_VERSION"|"$NODE_REPO:stage1") ;;
    "$NODE_REPO:$K8S_VERSION-"*) docker rmi "$t" >/dev/null 2>&1 || true ;; esac
done
echo "$NODE" >"$CACHE/node-image-$K8S_VERSION.ref"
echo "$NODE" >"$CACHE/node-image.ref"
echo "$NODE"
