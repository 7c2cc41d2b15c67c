# Shared helpers for the offline image builds (sourced, not run).
# Everything expensive lands under $CACHE, keyed by version and by a hash of
# the recipe that produced it, so a second run with nothing changed is a
# string of "cached" lines.

CACHE="${ZERODROP_CACHE:-/var/cache/zerodrop}"
GO="${GO:-go}"
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
START_SECONDS="${ZERODROP_START_SECONDS:-$SECONDS}"

log() { printf '[%4ds] %s\n' "$((SECONDS - START_SECONDS))" "$*"; }
die() { printf '[%4ds] ERROR: %s\n' "$((SECONDS - START_SECONDS))" "$*" >&2; exit 1; }

# key RECIPE... prints a short content key for a recipe (versions, flags,
# toolchain, the text of the files that shape the output).
key() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }

# done_ok DIR KEY: true when DIR holds a finished build for KEY.
done_ok() { [ -f "$1/.zerodrop-done" ] && [ "$(cat "$1/.zerodrop-done")" = "$2" ]; }
mark_done() { printf '%s' "$2" >"$1/.zerodrop-done"; }

# step NAME CMD...: runs CMD with a start line, an end line with elapsed time
# and the output in $CACHE/logs/NAME.log; prints the log's tail on failure.
step() {
  local name="$1"; shift
  mkdir -p "$CACHE/logs"
  local t0=$SECONDS
  log "$name: start (log: $CACHE/logs/$name.log)"
  if ! "$@" >"$CACHE/logs/$name.log" 2>&1; then
    tail -30 "$CACHE/logs/$name.log" >&2
    die "$name failed after $((SECONDS - t0)) s (full log: $CACHE/logs/$name.log)"
  fi
  log "$name: done in $((SECONDS - t0)) s"
}

# debian_mirror prints the Debian mirror of this machine's apt sources
# (DEBIAN_MIRROR overrides it), or dies: the images built from Debian
# packages (build-router.sh, build-proxies.sh) debootstrap from it.
debian_mirror() {
  local m="${DEBIAN_MIRROR:-$(
    { sed -n 's/^URIs:[[:space:]]*\(http[^ ]*\/debian\)\/*[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null
      sed -n 's/^deb[[:space:]]\+\(http[^ ]*\/debian\)\/*[[:space:]].*/\1/p' /etc/apt/sources.list 2>/dev/null || true; } | head -1
  )}"
  [ -n "$m" ] || die "no Debian mirror found in the apt sources; set DEBIAN_MIRROR"
  echo "$m"
}

# debian_rootfs NAME SUITE PKGS VERSIONPKG KEY: a minbase rootfs of Debian
# SUITE holding PKGS, debootstrapped from this machine's mirror
# (debian_mirror) and cleaned of apt's lists, logs, docs and locales, as
# the tarball $CACHE/rootfs/NAME-SUITE-KEY.tar, made once per KEY (which
# must cover PKGS, the mirror and this function: debian_rootfs_recipe).
# VERSIONPKG's installed version is in it at /etc/zerodrop-VERSIONPKG-version.
# Prints the tarball's path.
debian_rootfs() {
  local name="$1" suite="$2" pkgs="$3" vpkg="$4" k="$5" tarball dir
  tarball="$CACHE/rootfs/$name-$suite-$k.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || die "debootstrap missing: run make host-setup"
    mkdir -p "$CACHE/rootfs"
    dir="$CACHE/rootfs/$name-$suite-$k.dir"
    rm -rf "$dir"; mkdir -p "$dir"
    step "$name-debootstrap" debootstrap --variant=minbase --include="$pkgs" "$suite" "$dir" "$(debian_mirror)" >&2
    chroot "$dir" dpkg-query -W -f '${Version}\n' "$vpkg" >"$dir/etc/zerodrop-$vpkg-version"
    chroot "$dir" apt-get clean >&2
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/var/log/* "$dir"/usr/share/doc/* \
      "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/tmp/*
    step "$name-tar" tar -C "$dir" --numeric-owner -cf "$tarball.tmp" . >&2
    mv "$tarball.tmp" "$tarball"
    rm -rf "$dir"
  fi
  echo "$tarball"
}

# debian_rootfs_recipe is what a debian_rootfs image's key must name
# besides its packages: the mirror, the apt sources and this recipe.
debian_rootfs_recipe() {
  debian_mirror
  cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | sha256sum
  declare -f debian_rootfs
}

# mod_time MODULE@VERSION prints the module's publish time (RFC 3339) from the
# proxy's info file, for reproducible build dates.
mod_time() {
  "$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"Time": "\(.*\)",*$/\1/p' | head -1
}
mod_dir() {
  "$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' | head -1
}

# k8s_versions: everything that follows from $K8S_VERSION, read from that
# release's own source (the k8s.io/kubernetes module), never assumed:
#   K8S_DIR        the module's directory in the module cache
#   K8S_GO_LINE    its go.mod `go` line; K8S_GODEBUG its `godebug` directives
#   K8S_TOOLCHAIN  the Go it is built with: its .go-version (the Go upstream
#                  releases it with; for a release without one, the Go in its
#                  kube-cross image tag, build/build-image/cross/VERSION), or the newest
#                  patch of that Go the module proxy serves, fetched by `go`
#                  as GOTOOLCHAIN=goX.Y.Z; KUBERNETES_GO_TOOLCHAIN=local (or
#                  goX.Y.Z) overrides it
#   ETCD_TAG, ETCD_VERSION, COREDNS_VERSION, PAUSE_VERSION: kubeadm's
#                  defaults for the release (cmd/kubeadm/app/constants/
#                  constants.go: DefaultEtcdVersion, CoreDNSVersion,
#                  PauseVersion; the same names from v1.27 to v1.37), which
#                  `kubeadm config images list` asks for; images tagged with
#                  exactly these names are never pulled.
# Also writes them, with where they came from, to
# $CACHE/logs/versions-$K8S_VERSION.txt.
k8s_versions() {
  # Already resolved for this version (by this shell or the build-node.sh
  # that started it, which exports the results).
  [ "${K8S_VERSIONS_OF:-}" != "$K8S_VERSION" ] || return 0
  case "$K8S_VERSION" in
    v1.[0-9]*.[0-9]*) ;;
    *) die "KUBERNETES_VERSION=$K8S_VERSION: want a release like v1.37.2" ;;
  esac
  K8S_DIR="$(mod_dir "k8s.io/kubernetes@$K8S_VERSION")"
  [ -n "$K8S_DIR" ] && [ -f "$K8S_DIR/go.mod" ] || die "cannot fetch k8s.io/kubernetes@$K8S_VERSION from the module proxy (check the version exists: go mod download -json k8s.io/kubernetes@$K8S_VERSION)"
  K8S_GO_LINE="$(awk '$1 == "go" {print $2; exit}' "$K8S_DIR/go.mod")"
  K8S_GODEBUG="$(awk '/^godebug[[:space:]]*\(/ {b=1} b {print} b && /^\)/ {b=0} /^godebug[[:space:]]+[^(]/ {print}' "$K8S_DIR/go.mod")"
  if [ -n "${KUBERNETES_GO_TOOLCHAIN:-}" ]; then
    K8S_TOOLCHAIN="$KUBERNETES_GO_TOOLCHAIN"
  else
    local cross="$K8S_DIR/build/build-image/cross/VERSION" want=""
    if [ -f "$K8S_DIR/.go-version" ]; then
      want="go$(tr -d '[:space:]' <"$K8S_DIR/.go-version")"
    elif [ -f "$cross" ]; then
      # A release without .go-version names its Go in the tag of the
      # kube-cross image it was built in: v1.25.0-go1.19.3-bullseye.0.
      want="$(sed -n 's/^v[0-9.]*-\(go1\.[0-9][0-9.]*\)-.*/\1/p' "$cross" | head -1)"
    fi
    if [ -n "$want" ]; then
      K8S_TOOLCHAIN="$(served_toolchain "$want")" || die "Go $want, the one $K8S_VERSION was released with, is not on the module proxy, nor a later patch of it; KUBERNETES_GO_TOOLCHAIN=goX.Y.Z (or local) builds with another"
      [ "$K8S_TOOLCHAIN" = "$want" ] || log "kubernetes $K8S_VERSION: released with $want, which the module proxy does not serve; building with $K8S_TOOLCHAIN, the newest patch of that Go it serves"
    else
      K8S_TOOLCHAIN=local
    fi
  fi
  local c="$K8S_DIR/cmd/kubeadm/app/constants/constants.go"
  k8s_const() { sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p" "$c" | head -1; }
  ETCD_TAG="$(k8s_const DefaultEtcdVersion)"
  COREDNS_VERSION="$(k8s_const CoreDNSVersion)"
  PAUSE_VERSION="$(k8s_const PauseVersion)"
  [ -n "$ETCD_TAG" ] && [ -n "$COREDNS_VERSION" ] && [ -n "$PAUSE_VERSION" ] \
    || die "could not read DefaultEtcdVersion/CoreDNSVersion/PauseVersion from $c (got '$ETCD_TAG' '$COREDNS_VERSION' '$PAUSE_VERSION'); this release may name them differently: read the file and teach lib.sh k8s_versions"
  ETCD_VERSION="v${ETCD_TAG%-*}"  # "3.7.0-0" (image tag) -> v3.7.0 (module version)
  mkdir -p "$CACHE/logs"
  {
    echo "kubernetes $K8S_VERSION (k8s.io/kubernetes@$K8S_VERSION, $K8S_DIR)"
    echo "go.mod go line: $K8S_GO_LINE; godebug: ${K8S_GODEBUG:-none}"
    echo "toolchain: $K8S_TOOLCHAIN (from .go-version, or build/build-image/cross/VERSION for a release without one, unless KUBERNETES_GO_TOOLCHAIN was set)"
    echo "from cmd/kubeadm/app/constants/constants.go:"
    echo "  DefaultEtcdVersion=$ETCD_TAG -> go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    echo "  CoreDNSVersion=$COREDNS_VERSION -> github.com/coredns/coredns@$COREDNS_VERSION"
    echo "  PauseVersion=$PAUSE_VERSION -> clusters/images/pause tagged registry.k8s.io/pause:$PAUSE_VERSION"
  } >"$CACHE/logs/versions-$K8S_VERSION.txt"
  K8S_VERSIONS_OF="$K8S_VERSION"
  export K8S_VERSIONS_OF K8S_DIR K8S_GO_LINE K8S_GODEBUG K8S_TOOLCHAIN ETCD_TAG ETCD_VERSION COREDNS_VERSION PAUSE_VERSION
  log "kubernetes $K8S_VERSION: go $K8S_GO_LINE, toolchain $K8S_TOOLCHAIN, etcd $ETCD_TAG, coredns $COREDNS_VERSION, pause $PAUSE_VERSION (from its kubeadm constants; $CACHE/logs/versions-$K8S_VERSION.txt)"
}

# served_toolchain goX.Y.Z: prints goX.Y.Z when the module proxy (or the
# module cache) has that Go toolchain, else the newest later patch of the
# same minor it has (a patch release only fixes; the proxy here may lack
# some versions); fails when it has none. Asks for the .info only: a
# toolchain is downloaded once chosen, when first used.
served_toolchain() {
  local want="$1" minor patch p best="" env dl suffix
  env="$("$GO" env GOMODCACHE GOHOSTOS GOHOSTARCH)" || return 1
  dl="$(sed -n 1p <<<"$env")/cache/download/golang.org/toolchain/@v"
  suffix=".$(sed -n 2p <<<"$env")-$(sed -n 3p <<<"$env")"
  cached() { [ -f "$dl/v0.0.1-$1$suffix.zip" ]; }
  has_toolchain() { cached "$1" || GOFLAGS= "$GO" list -m -json "golang.org/toolchain@v0.0.1-$1$suffix" >/dev/null 2>&1; }
  if has_toolchain "$want"; then echo "$want"; return 0; fi
  # The search asks the proxy about 30 versions: its answer is kept, and
  # used again while that toolchain is in the module cache.
  local memo="$CACHE/state/toolchain-for-$want"
  if [ -s "$memo" ] && best="$(cat "$memo")" && cached "$best"; then
    echo "$best"; return 0
  fi
  best=""
  # Before Go 1.21 a minor's first release had no patch number (go1.19).
  case "$want" in
    go1.*.*) minor="${want%.*}"; patch="${want##*.}" ;;
    *) minor="$want"; patch=0 ;;
  esac
  case "$patch" in ''|*[!0-9]*) return 1 ;; esac
  for p in $(seq $((patch + 1)) $((patch + 30))); do
    if has_toolchain "$minor.$p"; then best="$minor.$p"; fi
  done
  [ -n "$best" ] || return 1
  mkdir -p "$CACHE/state" && echo "$best" >"$memo"
  echo "$best"
}

# kgo ARGS...: the Go command with the release's toolchain. "+auto" lets a
# component whose go.mod needs a newer Go than the release's switch up.
kgo() { GOTOOLCHAIN="$K8S_TOOLCHAIN" "$GO" "$@"; }
kgo_auto() { GOTOOLCHAIN="$K8S_TOOLCHAIN+auto" "$GO" "$@"; }
