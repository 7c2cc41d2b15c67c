#!/usr/bin/env bash
# make cluster / make cluster-down: everything a test cluster needs, in order,
# with progress lines. Usage: cluster.sh up|down
# Environment: PROVIDER=kind|existing, CLUSTER_NAME (default zerodrop),
# ZERODROP_KUBECONFIG (default out/kubeconfig), KIND_NODE_IMAGE.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
PROVIDER="${PROVIDER:-kind}"
GO="${GO:-go}"
export ZERODROP_CACHE="${ZERODROP_CACHE:-/var/cache/zerodrop}"
t0=$SECONDS
say() { printf '[%4ds] %s\n' "$((SECONDS - t0))" "$*"; }

action="${1:-}"
case "$action" in up|down) ;; *) echo "usage: cluster.sh up|down" >&2; exit 2 ;; esac
# Validate before touching anything: a typo creates nothing.
case "$PROVIDER" in
  kind|existing) ;;
  *) echo "cluster: unknown PROVIDER=$PROVIDER: known providers are existing, kind" >&2; exit 2 ;;
esac

say "building the zerodrop CLI"
mkdir -p "$repo/bin"
(cd "$repo" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-X main.version=${ZERODROP_VERSION:-dev}" -o bin/zerodrop ./cmd/zerodrop)
zd="$repo/bin/zerodrop"
name="${CLUSTER_NAME:-zerodrop}"
kubeconfig="${ZERODROP_KUBECONFIG:-$repo/out/kubeconfig}"

if [ "$action" = down ]; then
  if [ "$PROVIDER" = kind ] && ! timeout 10 docker info >/dev/null 2>&1; then
    say "docker is not running: no kind cluster to remove"
    exit 0
  fi
  exec "$zd" cluster down --provider "$PROVIDER" --name "$name" --kubeconfig "$kubeconfig"
fi

if [ "$PROVIDER" = existing ]; then
  exec "$zd" cluster up --provider existing ${KUBECONFIG:+--kubeconfig "$KUBECONFIG"}
fi
say "host set-up"
"$here/host-setup.sh"
say "node image"
export ZERODROP_START_SECONDS=$t0
img="$("$here/node-image.sh" | tail -1)"
say "node image: $img"
mkdir -p "$(dirname "$kubeconfig")"
# A node image without MetalLB's manifest (kind's stock image, pulled when
# this host is online) gets it from the MetalLB module, fetched here at set-up
# time like every other input; the harness itself never downloads.
manifest_args=()
if ! docker run --rm --pull=never --entrypoint /usr/bin/test "$img" -f /kind/manifests/metallb-native.yaml 2>/dev/null; then
  . "$here/images/versions.sh"
  mdir="$("$GO" mod download -json "go.universe.tf/metallb@$METALLB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' | head -1)"
  [ -n "$mdir" ] && [ -f "$mdir/config/manifests/metallb-native.yaml" ] || {
    echo "cluster: node image $img carries no MetalLB manifest and go.universe.tf/metallb@$METALLB_VERSION cannot be fetched; build the offline image with 'make node-image'" >&2; exit 1; }
  say "MetalLB manifest from go.universe.tf/metallb@$METALLB_VERSION (the node image carries none)"
  manifest_args=(--metallb-manifest "$mdir/config/manifests/metallb-native.yaml")
fi
# LB=all runs MetalLB's BGP mode too (column metallb-bgp), behind the
# upstream router built from Debian's FRR (cached like the node image).
router_args=()
if [ "${LB:-metallb}" = all ] && [ "${ZERODROP_BGP:-1}" != 0 ]; then
  say "router image"
  router_img="$("$here/images/build-router.sh" | tail -1)"
  router_args=(--router-image "$router_img")
fi
"$zd" cluster up --provider kind --name "$name" --node-image "$img" --kubeconfig "$kubeconfig" "${manifest_args[@]}" "${router_args[@]}"
say "done"
