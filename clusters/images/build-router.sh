#!/usr/bin/env bash
# Builds the upstream router image of MetalLB's BGP mode (harness/router):
# FRR and iproute2 from Debian bookworm, debootstrapped from this machine's
# own apt mirror (as build-rootfs.sh does for the nodes) and imported as a
# local image; nothing is pulled. Prints the image reference on the last
# line. Cached by a key of the package list, the apt sources and this recipe.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SUITE=bookworm
PKGS="$FRR_PACKAGE,iproute2,iputils-ping,procps,tcpdump"
debian_mirror >/dev/null
docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); run 'make host-setup' first"

# recipe-start
k=$(key router "$SUITE" "$PKGS" "$(debian_rootfs_recipe)" "$(sed -n '/^# recipe-start/,/^# recipe-end/p' "$0")")
img="zerodrop/router:frr-$k"
if docker image inspect "$img" >/dev/null 2>&1; then log "router image: cached ($img)"; echo "$img"; exit 0; fi
tarball="$(debian_rootfs router "$SUITE" "$PKGS" frr "$k")"
# The router's daemons are started by harness/router (frrinit.sh, after it
# has written /etc/frr); the container itself only has to stay up. The
# version FRR reports is what the report's implementation block says.
step router-import docker import --change 'CMD ["sleep", "infinity"]' \
  --change 'LABEL dev.zerodrop.router.frr-version='"$(tar -xOf "$tarball" ./etc/zerodrop-frr-version)" "$tarball" "$img"
# recipe-end
log "router image: $img"
echo "$img"
