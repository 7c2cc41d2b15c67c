#!/usr/bin/env bash
# Builds the Debian bookworm root filesystem shared by the node image and the
# images that need a userland (kube-proxy, flannel: iptables, conntrack) with
# debootstrap from the machine's own apt mirror, as $CACHE/rootfs/bookworm-$KEY.tar.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SUITE=bookworm
PKGS=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,nftables,conntrack,ethtool,socat,iproute2,mount,util-linux,procps,kmod,ca-certificates,jq,bash,libseccomp2,pigz,curl,fuse-overlayfs
# The mirror is whatever this machine's apt uses (deb822 or one-line format).
mirror="${DEBIAN_MIRROR:-$(
  { sed -n 's/^URIs:[[:space:]]*\(http[^ ]*\/debian\)\/*[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null
    sed -n 's/^deb[[:space:]]\+\(http[^ ]*\/debian\)\/*[[:space:]].*/\1/p' /etc/apt/sources.list 2>/dev/null || true; } | head -1
)}"
[ -n "$mirror" ] || die "no Debian mirror found in the apt sources; set DEBIAN_MIRROR"

# recipe-start
# The snapshot date of the sources makes the package set reproducible enough
# to key on; the script text covers the package list and clean-up.
k=$(key rootfs "$SUITE" "$PKGS" "$mirror" "$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | sha256sum)" "$(sed -n '/^# recipe-start/,/^# recipe-end/p' "$0")")
out="$CACHE/rootfs/$SUITE-$k.tar"
if [ -s "$out" ]; then log "rootfs: cached ($out)"; echo "$out" >"$CACHE/rootfs/current.path"; exit 0; fi
command -v debootstrap >/dev/null || die "debootstrap missing: run make host-setup"
dir="$CACHE/rootfs/$SUITE-$k.dir"
rm -rf "$dir"; mkdir -p "$dir"
step debootstrap debootstrap --variant=minbase --include="$PKGS" "$SUITE" "$dir" "$mirror"
cleanup() {
  chroot "$dir" apt-get clean
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/var/log/* "$dir"/usr/share/doc/* \
    "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/tmp/* "$dir"/root/.cache
  : >"$dir/etc/machine-id"
  # Debian's containerd and CNI plugins live elsewhere than kind's files expect.
  mkdir -p "$dir/opt/cni/bin"
  for f in "$dir"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/$(basename "$f")" "$dir/opt/cni/bin/$(basename "$f")"; done
  for b in containerd ctr containerd-shim-runc-v2; do
    [ -e "$dir/usr/bin/$b" ] && ln -sf "/usr/bin/$b" "$dir/usr/local/bin/$b"
  done
  return 0
}
step rootfs-cleanup cleanup
step rootfs-tar tar -C "$dir" --numeric-owner -cf "$out.tmp" .
mv "$out.tmp" "$out"
rm -rf "$dir"
# recipe-end
echo "$out" >"$CACHE/rootfs/current.path"
log "rootfs: $out ($(du -h "$out" | cut -f1))"
