#!/usr/bin/env bash
# Builds the non-Kubernetes cluster binaries from Go modules into
# $CACHE/bin/<name>-<version>-<key>/: etcd, CoreDNS, MetalLB controller and
# speaker, flanneld, kube-vip, and our pause. Usage: build-components.sh [name...]
# etcd, CoreDNS and pause are the versions $K8S_VERSION's kubeadm wants
# (lib.sh k8s_versions), built with that release's Go toolchain.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
repo="$(cd "$(dirname "$0")/../.." && pwd)"

k8s_versions
local_gover="$("$GO" env GOVERSION)"
k8s_gover="$(kgo env GOVERSION)" || die "cannot get Go toolchain $K8S_TOOLCHAIN (GOTOOLCHAIN=$K8S_TOOLCHAIN go env GOVERSION failed; KUBERNETES_GO_TOOLCHAIN=local builds with the local Go)"
recipe() { sed -n "/^# recipe $1 start/,/^# recipe $1 end/p" "$0"; }

# component NAME VERSION FN GOVERSION: runs FN OUTDIR VERSION unless the
# keyed output exists; records the output dir in $CACHE/bin/NAME-VERSION.path.
component() {
  local name="$1" ver="$2" fn="$3" gover="$4" k out
  k=$(key "$name" "$ver" "$gover" "$(recipe "$name")" "$(extra_key "$name")")
  out="$CACHE/bin/$name-$ver-$k"
  if done_ok "$out" "$k"; then
    log "$name $ver: cached"
  else
    rm -rf "$out"; mkdir -p "$out"
    "$fn" "$out" "$ver"
    mark_done "$out" "$k"
    log "$name $ver: built into $out"
  fi
  echo "$out" >"$CACHE/bin/$name-$ver.path"
}
extra_key() { if [ "$1" = pause ]; then cat "$repo/clusters/images/pause/main.go"; fi; }

# recipe etcd start
build_etcd() {
  local out="$1" ver="$2" mod="$CACHE/build/etcd-$2" gol
  rm -rf "$mod"; mkdir -p "$mod"
  # go install refuses etcd (replaces in its go.mod); as a dependency it
  # needs none. The scratch module takes etcd's own go line.
  gol="$(awk '$1 == "go" {print $2; exit}' "$(mod_dir "go.etcd.io/etcd/server/v3@$ver")/go.mod")"
  [ -n "$gol" ] || die "cannot fetch go.etcd.io/etcd/server/v3@$ver (the etcd $ETCD_TAG kubeadm $K8S_VERSION wants)"
  printf 'module zerodrop.local/etcdbuild\n\ngo %s\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$gol" "$ver" >"$mod/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$mod/tools.go"
  (cd "$mod" && step "etcd-$ver-mod-tidy" kgo_auto mod tidy)
  (cd "$mod" && step "etcd-$ver" env CGO_ENABLED=0 GOTOOLCHAIN="$K8S_TOOLCHAIN+auto" "$GO" build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
}
# recipe etcd end

# recipe coredns start
build_coredns() {
  # Outside any module (a cache inside the checkout is not): within one,
  # "+auto" would switch up to the Go that module's go.mod asks for, not the
  # release's (CoreDNS v1.9.3's x/net then fails to link on Go 1.23 and later).
  local d gomod
  d="$(mktemp -d)"
  gomod="$(cd "$d" && GOWORK=off GOTOOLCHAIN=local "$GO" env GOMOD)"
  [ "$gomod" = /dev/null ] || [ -z "$gomod" ] || { rm -rf "$d"; die "building CoreDNS from $d still finds the module $gomod"; }
  (cd "$d" && step "coredns-$2" env GOWORK=off CGO_ENABLED=0 GOTOOLCHAIN="$K8S_TOOLCHAIN+auto" GOBIN="$1" "$GO" install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$2") || { rm -rf "$d"; exit 1; }
  rm -rf "$d"
}
# recipe coredns end

# recipe metallb start
build_metallb() {
  step metallb env CGO_ENABLED=0 GOBIN="$1" "$GO" install -trimpath -ldflags "-s -w" \
    "go.universe.tf/metallb/controller@$2" "go.universe.tf/metallb/speaker@$2"
  # The upstream manifest (CRDs, RBAC, webhook, deployments) ships in the module.
  cp "$(mod_dir "go.universe.tf/metallb@$2")/config/manifests/metallb-native.yaml" "$1/metallb-native.yaml"
  chmod 644 "$1/metallb-native.yaml"
}
# recipe metallb end

# recipe flannel start
build_flannel() {
  # No checksum-database entry exists for flannel (or its tencentcloud SDK
  # dependency); flannel's own go.sum still pins every other module. Its UDP
  # backend is C, so cgo with a static link.
  step flannel env GONOSUMDB=github.com/flannel-io/flannel,github.com/tencentcloud \
    CGO_ENABLED=1 GOBIN="$1" "$GO" install -trimpath -tags netgo,osusergo \
    -ldflags "-s -w -extldflags -static -X github.com/flannel-io/flannel/pkg/version.Version=$2" \
    "github.com/flannel-io/flannel@$2"
}
# recipe flannel end

# recipe kube-vip start
build_kube_vip() {
  # kube-vip's own go.sum pins every dependency, which the checksum database
  # knows; only kube-vip's module is missing there, so its hash is checked
  # against the pinned one (versions.sh) before anything is built from it.
  # Built as a dependency of a scratch module (as etcd is): `go install
  # mod@version` asks the proxy for the module's version list to look for a
  # deprecation, which this proxy refuses. The scratch module requires
  # kube-vip alone, so every other version comes from kube-vip's go.mod.
  local out="$1" ver="$2" mod="$CACHE/build/kube-vip-$2" sum gol
  export GONOSUMDB=github.com/kube-vip/kube-vip
  sum="$("$GO" mod download -json "github.com/kube-vip/kube-vip@$ver" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",*$/\1/p' | head -1)"
  [ "$sum" = "$KUBE_VIP_SUM" ] || die "github.com/kube-vip/kube-vip@$ver hashes to '$sum', not the pinned $KUBE_VIP_SUM (clusters/images/versions.sh)"
  rm -rf "$mod"; mkdir -p "$mod"
  gol="$(awk '$1 == "go" {print $2; exit}' "$(mod_dir "github.com/kube-vip/kube-vip@$ver")/go.mod")"
  printf 'module zerodrop.local/kubevipbuild\n\ngo %s\n\nrequire github.com/kube-vip/kube-vip %s\n' "$gol" "$ver" >"$mod/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/kube-vip/kube-vip"\n' >"$mod/tools.go"
  (cd "$mod" && step "kube-vip-$ver-mod-tidy" "$GO" mod tidy)
  (cd "$mod" && step "kube-vip-$ver" env CGO_ENABLED=0 "$GO" build -trimpath \
    -ldflags "-s -w -X main.Version=$ver" -o "$out/kube-vip" github.com/kube-vip/kube-vip)
  unset GONOSUMDB
}
# recipe kube-vip end

# recipe pause start
build_pause() {
  (cd "$repo" && step "pause-$2" env CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$1/pause" ./clusters/images/pause)
}
# recipe pause end

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(pause etcd metallb flannel coredns kube-vip)
for w in "${want[@]}"; do
  case "$w" in
    etcd) component etcd "$ETCD_VERSION" build_etcd "$k8s_gover" ;;
    coredns) component coredns "$COREDNS_VERSION" build_coredns "$k8s_gover" ;;
    metallb) component metallb "$METALLB_VERSION" build_metallb "$local_gover" ;;
    flannel) component flannel "$FLANNEL_VERSION" build_flannel "$local_gover" ;;
    pause) component pause "$PAUSE_VERSION" build_pause "$local_gover" ;;
    kube-vip) component kube-vip "$KUBE_VIP_VERSION" build_kube_vip "$local_gover" ;;
    *) die "unknown component $w (known: etcd coredns metallb flannel pause kube-vip)" ;;
  esac
done
