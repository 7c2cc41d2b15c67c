#!/usr/bin/env bash
# Builds the Kubernetes binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kube-proxy, kubelet, kubeadm, kubectl) from the
# k8s.io/kubernetes Go module into $CACHE/bin/kubernetes-$VERSION-$KEY/.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces 31 staging
# modules with ./staging paths), so it is built as a dependency of a scratch
# module that maps each staging module to its published version.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CMDS=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl)
staging_ver="v0.${K8S_VERSION#v1.}"  # v1.34.2 -> v0.34.2
k8s_versions
# Asking the toolchain for its version also fetches it (once, into the module
# cache) when the release wants another Go than the local one.
gover="$(kgo env GOVERSION)" || die "cannot get Go toolchain $K8S_TOOLCHAIN for $K8S_VERSION (GOTOOLCHAIN=$K8S_TOOLCHAIN go env GOVERSION failed; KUBERNETES_GO_TOOLCHAIN=local builds with the local Go)"
log "kubernetes $K8S_VERSION: building with $gover"

k=$(key k8s "$K8S_VERSION" "$gover" "${CMDS[*]}" "$(sed -n '/^# recipe-start/,/^# recipe-end/p' "$0")")
out="$CACHE/bin/kubernetes-$K8S_VERSION-$k"
if done_ok "$out" "$k"; then log "kubernetes $K8S_VERSION: cached ($out)"; echo "$out" >"$CACHE/bin/kubernetes-$K8S_VERSION.path"; exit 0; fi

# recipe-start
mod="$CACHE/build/kubernetes-$K8S_VERSION"
mkdir -p "$mod" "$out"
kdir="$K8S_DIR"
btime="$(mod_time "k8s.io/kubernetes@$K8S_VERSION")"
{
  echo "module zerodrop.local/k8sbuild"
  echo
  # The release's own go line and godebug directives: the binaries get the
  # runtime defaults upstream's main module gives them, whatever Go builds.
  echo "go $K8S_GO_LINE"
  echo
  [ -z "$K8S_GODEBUG" ] || { printf '%s\n' "$K8S_GODEBUG"; echo; }
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$kdir/go.mod" \
    | awk -v v="$staging_ver" '{print "replace " $1 " => " $1 " " v}'
} >"$mod/go.mod"
# Every staging module upstream replaces must be mapped (29 in v1.27, 31 in
# v1.34, 33 in v1.36 and v1.37).
n=$(grep -c '^replace' "$mod/go.mod")
want=$(grep -cE '=> \./staging/' "$kdir/go.mod")
[ "$n" -ge 20 ] && [ "$n" = "$want" ] || die "mapped $n staging replaces of the $want in $kdir/go.mod"
{
  echo "//go:build tools"
  echo
  echo "package tools"
  echo
  echo "import ("
  for c in "${CMDS[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
  echo ")"
} >"$mod/tools.go"

cd "$mod"
step "k8s-$K8S_VERSION-mod-tidy" kgo mod tidy
major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
commit="$(printf '%s' "k8s.io/kubernetes@$K8S_VERSION" | sha1sum | cut -c1-40)"  # no VCS in a module zip
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$btime -X $pkg.gitCommit=$commit"
done
for c in "${CMDS[@]}"; do
  step "k8s-$K8S_VERSION-$c" env CGO_ENABLED=0 GOTOOLCHAIN="$K8S_TOOLCHAIN" "$GO" build -trimpath -ldflags "$ld" -o "$out/$c" "k8s.io/kubernetes/cmd/$c"
done
# recipe-end
"$out/kubeadm" version -o short | grep -qx "$K8S_VERSION" || die "kubeadm reports $("$out/kubeadm" version -o short), want $K8S_VERSION"
mark_done "$out" "$k"
echo "$out" >"$CACHE/bin/kubernetes-$K8S_VERSION.path"
log "kubernetes $K8S_VERSION: built into $out"
