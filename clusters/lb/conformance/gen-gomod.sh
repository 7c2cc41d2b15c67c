#!/usr/bin/env bash
# gen-gomod.sh K8S_VERSION: writes go.mod for the e2e module. k8s.io/kubernetes
# requires its staging modules at v0.0.0 and points them at ./staging with
# replace directives that do not apply to a dependent module, so every module
# in that replace block is replaced here by its published v0.X.Y twin.
set -euo pipefail
ver="${1:?usage: gen-gomod.sh vX.Y.Z}"
stag="v0.${ver#v1.}"
dir="$(go mod download -json "k8s.io/kubernetes@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
[ -f "$dir/go.mod" ] || { echo "no go.mod for k8s.io/kubernetes@$ver" >&2; exit 1; }
gover="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$dir/go.mod")"
godebug="$(sed -n 's/^godebug \(.*\)$/\1/p' "$dir/go.mod")"
{
  echo "module zerodrop.dev/zerodrop/clusters/lb/conformance"
  echo
  echo "go $gover"
  [ -z "$godebug" ] || { echo; echo "godebug $godebug"; }
  echo
  echo "require k8s.io/kubernetes $ver"
  echo
  echo "tool ("
  printf "\tgithub.com/onsi/ginkgo/v2/ginkgo\n\tk8s.io/kubernetes/cmd/kubectl\n\tk8s.io/kubernetes/test/images/agnhost\n"
  echo ")"
  echo
  echo "replace ("
  sed -n '/^replace (/,/^)/p' "$dir/go.mod" |
    sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/\(k8s\.io/[^ ]*\)$#\1#p' |
    while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$stag"; done
  echo ")"
} > go.mod
