#!/usr/bin/env bash
# Decides which kind node image to use and makes sure it is in the local
# Docker; prints it on the last line.
#   1. $KIND_NODE_IMAGE when set (must already be local or pullable)
#   2. $KIND_STOCK_IMAGE (e.g. a kindest/node of the same version, pinned by
#      digest) when set and this host can pull it (short timeout; skipped
#      with ZERODROP_TRY_PULL=0)
#   3. otherwise the offline build of KUBERNETES_VERSION
#      (clusters/images/build-node.sh), cached per version
# A stock image is no longer tried by default: it pinned one version, so
# every other KUBERNETES_VERSION would have run on it unnoticed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
STOCK="${KIND_STOCK_IMAGE:-}"

if [ -n "${KIND_NODE_IMAGE:-}" ]; then
  if ! docker image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1; then
    echo "node-image: pulling KIND_NODE_IMAGE=$KIND_NODE_IMAGE" >&2
    docker pull "$KIND_NODE_IMAGE" >&2 || { echo "node-image: KIND_NODE_IMAGE=$KIND_NODE_IMAGE is not local and cannot be pulled" >&2; exit 1; }
  fi
  echo "node-image: using KIND_NODE_IMAGE" >&2
  echo "$KIND_NODE_IMAGE"; exit 0
fi
if [ -n "$STOCK" ] && docker image inspect "$STOCK" >/dev/null 2>&1; then
  echo "$STOCK"; exit 0
fi
if [ -n "$STOCK" ] && [ "${ZERODROP_TRY_PULL:-1}" != 0 ]; then
  echo "node-image: trying to pull $STOCK (15 s limit)" >&2
  if timeout 15 docker pull "$STOCK" >/dev/null 2>&1; then
    echo "$STOCK"; exit 0
  fi
  echo "node-image: cannot pull; building the node image offline" >&2
fi
# Progress goes to stderr; stdout carries only the image reference.
. "$here/images/versions.sh"
"$here/images/build-node.sh" >&2
cat "${ZERODROP_CACHE:-/var/cache/zerodrop}/node-image-$KUBERNETES_VERSION.ref"
