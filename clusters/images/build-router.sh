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
mirror="$(debian_mirror)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); run 'make host-setup' first"

# recipe-start
k=$(key router "$SUITE" "$PKGS" "$mirror" "$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | sha256sum)" "$(sed -n '/^# recipe-start/,/^# recipe-end/p' "$0")")
img="zerodrop/router:frr-$k"
if docker image inspect "$img" >/dev/null 2>&1; then log "router image: cached ($img)"; echo "$img"; exit 0; fi
command -v debootstrap >/dev/null || die "debootstrap missing: run make host-setup"
mkdir -p "$CACHE/rootfs"
tarball="$CACHE/rootfs/router-$SUITE-$k.tar"
if [ ! -s "$tarball" ]; then
  dir="$CACHE/rootfs/router-$SUITE-$k.dir"
  rm -rf "$dir"; mkdir -p "$dir"
  step router-debootstrap debootstrap --variant=minbase --include="$PKGS" "$SUITE" "$dir" "$mirror"
  # The version FRR reports is what the report's implementation block says.
  chroot "$dir" dpkg-query -W -f '${Version}\n' frr >"$dir/etc/frr/zerodrop-frr-version"
  chroot "$dir" apt-get clean
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/var/log/* "$dir"/usr/share/doc/* \
    "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/tmp/*
  step router-tar tar -C "$dir" --numeric-owner -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$dir"
fi
# The router's daemons are started by harness/router (frrinit.sh, after it
# has written /etc/frr); the container itself only has to stay up.
step router-import docker import --change 'CMD ["sleep", "infinity"]' \
  --change 'LABEL dev.zerodrop.router.frr-version='"$(tar -xOf "$tarball" ./etc/frr/zerodrop-frr-version)" "$tarball" "$img"
# recipe-end
log "router image: $img"
echo "$img"
