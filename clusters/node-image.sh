#!/usr/bin/env bash
# Decides which kind node image to use and makes sure it is in the local
# Docker; prints it on the last line.
#   1. $KIND_NODE_IMAGE when set (must already be local or pullable)
#   2. kind's stock image when this host can pull it (checked with a short
#      timeout; skipped with ZERODROP_TRY_PULL=0)
#   3. otherwise the offline build (clusters/images/build-node.sh), cached
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
STOCK="${KIND_STOCK_IMAGE:-kindest/node:v1.34.0@sha256:7416a61b42b1662ca6ca89f02028ac133a309a2a30ba309614e8ec94d976dc5a}"

if [ -n "${KIND_NODE_IMAGE:-}" ]; then
  if ! docker image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1; then
    echo "node-image: pulling KIND_NODE_IMAGE=$KIND_NODE_IMAGE" >&2
    docker pull "$KIND_NODE_IMAGE" >&2 || { echo "node-image: KIND_NODE_IMAGE=$KIND_NODE_IMAGE is not local and cannot be pulled" >&2; exit 1; }
  fi
  echo "node-image: using KIND_NODE_IMAGE" >&2
  echo "$KIND_NODE_IMAGE"; exit 0
fi
if docker image inspect "$STOCK" >/dev/null 2>&1; then
  echo "$STOCK"; exit 0
fi
if [ "${ZERODROP_TRY_PULL:-1}" != 0 ]; then
  echo "node-image: trying to pull $STOCK (15 s limit)" >&2
  if timeout 15 docker pull "$STOCK" >/dev/null 2>&1; then
    echo "$STOCK"; exit 0
  fi
  echo "node-image: cannot pull; building the node image offline" >&2
fi
# Progress goes to stderr; stdout carries only the image reference.
"$here/images/build-node.sh" >&2
cat "${ZERODROP_CACHE:-/var/cache/zerodrop}/node-image.ref"
