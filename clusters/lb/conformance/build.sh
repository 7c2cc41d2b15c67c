#!/usr/bin/env bash
# build.sh [K8S_VERSION]: builds, offline (Go module proxy + Debian apt only),
#   1. e2e-network.test: Kubernetes' own test/e2e/network specs (the 17
#      [Feature:LoadBalancer] ones among them) from k8s.io/kubernetes@VERSION,
#   2. the ginkgo CLI (for --procs), agnhost (k8s.io/kubernetes/test/images/agnhost, static) and the image
#      registry.k8s.io/e2e-test-images/agnhost:<tag the e2e code expects>,
#      FROM a local Debian base plus wget and netcat-openbsd debs.
# Outputs are cached under $CACHE/<version>/, keyed by their inputs; a second
# run with nothing changed only checks keys. Nothing is pulled.
# Env: ZERODROP_UPSTREAM_CACHE (default /var/cache/zerodrop/upstream-e2e),
#      AGNHOST_BASE (default: newest local zerodrop/debian-base:* image).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
VERSION="${1:-${K8S_VERSION:-v1.34.2}}"
CACHE="${ZERODROP_UPSTREAM_CACHE:-/var/cache/zerodrop/upstream-e2e}/$VERSION"
export DOCKER_BUILDKIT=0 GOFLAGS="${GOFLAGS:--buildvcs=false}"
mkdir -p "$CACHE/logs"
t_start=$SECONDS
log() { printf '[%4ds] %s\n' "$((SECONDS - t_start))" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }
key() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }
step() { # step NAME CMD...: runs CMD logging to $CACHE/logs/NAME.log, timed
  local name="$1" t0=$SECONDS; shift
  log "$name: start"
  if ! "$@" >"$CACHE/logs/$name.log" 2>&1; then
    tail -30 "$CACHE/logs/$name.log" >&2; die "$name failed (log: $CACHE/logs/$name.log)"
  fi
  log "$name: done in $((SECONDS - t0)) s"
}

cd "$here"
gov="$(go env GOVERSION)"

# --- 1. the module and the e2e binary --------------------------------------
step mod-download go mod download "k8s.io/kubernetes@$VERSION"
kdir="$(go mod download -json "k8s.io/kubernetes@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
[ -d "$kdir/test/e2e/network" ] || die "k8s.io/kubernetes@$VERSION has no test/e2e/network"
./gen-gomod.sh "$VERSION"
step mod-tidy go mod tidy

minor="${VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-X k8s.io/component-base/version.gitVersion=$VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
e2e_key="$(key e2e "$VERSION" "$gov" "$ldflags" "$(cat e2e_test.go gen-gomod.sh go.mod go.sum)")"
E2E="$CACHE/e2e-network.test"
if [ -x "$E2E" ] && [ "$(cat "$E2E.key" 2>/dev/null)" = "$e2e_key" ]; then
  log "e2e-network.test: cached ($E2E)"
else
  step e2e-build go test -c -ldflags "$ldflags" -o "$E2E.tmp" .
  mv "$E2E.tmp" "$E2E"; echo "$e2e_key" >"$E2E.key"
  log "e2e-network.test: $(du -h "$E2E" | cut -f1)"
fi

# kubectl of the same version: the specs exec into Pods with it.
KUBECTL="$CACHE/kubectl"
kc_key="$(key kubectl "$VERSION" "$gov" "$(cat go.sum)")"
if [ -x "$KUBECTL" ] && [ "$(cat "$KUBECTL.key" 2>/dev/null)" = "$kc_key" ]; then
  log "kubectl $VERSION: cached"
else
  step kubectl-build env CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$KUBECTL.tmp" k8s.io/kubernetes/cmd/kubectl
  mv "$KUBECTL.tmp" "$KUBECTL"; echo "$kc_key" >"$KUBECTL.key"
fi

# The ginkgo CLI at the version the e2e code uses, for parallel runs.
gk_ver="$(go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)"
GINKGO="$CACHE/ginkgo"
if [ -x "$GINKGO" ] && [ "$(cat "$GINKGO.key" 2>/dev/null)" = "$gk_ver-$gov" ]; then
  log "ginkgo $gk_ver: cached"
else
  step ginkgo-build go build -o "$GINKGO.tmp" github.com/onsi/ginkgo/v2/ginkgo
  mv "$GINKGO.tmp" "$GINKGO"; echo "$gk_ver-$gov" >"$GINKGO.key"
fi

# --- 2. agnhost binary and image -------------------------------------------
# The tag the e2e code asks for (test/utils/image/manifest.go).
agn_ver="$(sed -n 's/^[[:space:]]*configs\[Agnhost\] = Config{list\.PromoterE2eRegistry, "agnhost", "\([^"]*\)"}.*/\1/p' "$kdir/test/utils/image/manifest.go")"
[ -n "$agn_ver" ] || die "agnhost version not found in test/utils/image/manifest.go"
AGN_IMAGE="registry.k8s.io/e2e-test-images/agnhost:$agn_ver"
agn_key="$(key agnhost "$VERSION" "$agn_ver" "$gov" "$(cat go.sum)")"
AGN="$CACHE/agnhost"
if [ -x "$AGN" ] && [ "$(cat "$AGN.key" 2>/dev/null)" = "$agn_key" ]; then
  log "agnhost $agn_ver: cached ($AGN)"
else
  # as upstream's test/images/image-util.sh bin: static, -w, main.Version
  step agnhost-build env CGO_ENABLED=0 go build -ldflags "-w -X main.Version=$agn_ver" \
    -o "$AGN.tmp" k8s.io/kubernetes/test/images/agnhost
  mv "$AGN.tmp" "$AGN"; echo "$agn_key" >"$AGN.key"
fi

# Base: a local Debian bookworm image (the zerodrop cluster build makes one);
# the exec-pod commands in the tests need /bin/sh, curl, wget, nc.
BASE="${AGNHOST_BASE:-$(docker images zerodrop/debian-base --format '{{.Repository}}:{{.Tag}}' | head -1)}"
[ -n "$BASE" ] && docker image inspect "$BASE" >/dev/null 2>&1 ||
  die "no local Debian base image (set AGNHOST_BASE, or build the cluster images first)"
base_id="$(docker image inspect -f '{{.Id}}' "$BASE")"
base_pkgs="$(docker run --rm --network none --entrypoint dpkg-query "$BASE" -W -f '${Package}\n' | sort)"
# wget: GNU wget with tries=1 in /etc/wgetrc, to behave like upstream's busybox
# wget (GNU's default of 20 tries turns each "not reachable from the pod" probe
# of the source-ranges spec into minutes). Debian's busybox 1.35 wget segfaults
# on -T, which the specs pass.
want=(wget netcat-openbsd curl bash iproute2)
missing=()
for p in "${want[@]}"; do grep -qx "$p" <<<"$base_pkgs" || missing+=("$p"); done
debdir="$CACHE/debs"; mkdir -p "$debdir"; chown _apt "$debdir" 2>/dev/null || true
debs=()
if [ "${#missing[@]}" -gt 0 ]; then
  # their dependency closure minus what the base already has
  closure="$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${missing[@]}" | grep -v '^ ' | grep -v '^<' | sort -u)"
  need="$(comm -23 <(echo "$closure") <(echo "$base_pkgs"))"
  for p in $need; do
    v="$(apt-cache policy "$p" | sed -n 's/^  Candidate: //p')"
    f="$(ls "$debdir/${p}_"*.deb 2>/dev/null | grep -F "_$(echo "$v" | sed 's/:/%3a/')_" | head -1 || true)"
    if [ -z "$f" ]; then (cd "$debdir" && apt-get download "$p=$v" >/dev/null) ||
      die "apt-get download $p=$v failed (run apt-get update?)"; fi
    debs+=("$(ls "$debdir/${p}_"*.deb | head -1)")
  done
fi
log "agnhost image base $BASE; extra debs: ${debs[*]:-none}"

ctx_files=("$AGN" "$kdir/test/images/agnhost/porter/localhost.crt" "$kdir/test/images/agnhost/porter/localhost.key")
dockerfile="FROM $BASE
COPY debs/ /tmp/debs/
RUN if ls /tmp/debs/*.deb >/dev/null 2>&1; then dpkg -i /tmp/debs/*.deb; fi && rm -rf /tmp/debs \\
 && echo 'tries = 1' >>/etc/wgetrc \\
 && mkdir -p /uploads && ln -s agnhost /agnhost-2 \\
 && groupadd -g 50000 group-defined-in-image \\
 && useradd -u 1000 -M -G group-defined-in-image user-defined-in-image
COPY localhost.crt localhost.key /
COPY agnhost /agnhost
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EXPOSE 80 8080 8081 9376 5000
WORKDIR /
ENTRYPOINT [\"/agnhost\"]
CMD [\"pause\"]"
img_key="$(key image "$agn_key" "$base_id" "$dockerfile" "$(for d in "${debs[@]}"; do basename "$d"; done)")"
have="$(docker image inspect -f '{{index .Config.Labels "dev.zerodrop.key"}}' "$AGN_IMAGE" 2>/dev/null || true)"
if [ "$have" = "$img_key" ]; then
  log "image $AGN_IMAGE: cached"
else
  ctx="$(mktemp -d "$CACHE/ctx.XXXXXX")"
  mkdir "$ctx/debs"
  for d in "${debs[@]}"; do cp "$d" "$ctx/debs/"; done
  cp "${ctx_files[@]}" "$ctx/"
  printf '%s\nLABEL dev.zerodrop.key=%s\n' "$dockerfile" "$img_key" >"$ctx/Dockerfile"
  old="$(docker image inspect -f '{{.Id}}' "$AGN_IMAGE" 2>/dev/null || true)"
  step agnhost-image docker build --network none -t "$AGN_IMAGE" "$ctx"
  rm -rf "$ctx"
  if [ -n "$old" ] && [ "$(docker image inspect -f '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
    docker rmi "$old" >/dev/null 2>&1 || true
  fi
fi
# smoke: the tools the specs exec in agnhost pods
docker run --rm --network none --entrypoint /bin/sh "$AGN_IMAGE" -c \
  'command -v curl wget nc >/dev/null && /agnhost --version' >/dev/null ||
  die "$AGN_IMAGE lacks /bin/sh, curl, wget, nc or /agnhost"
echo "$AGN_IMAGE" >"$CACHE/agnhost-image"
log "done: $E2E ($(du -h "$E2E" | cut -f1)), $AGN_IMAGE ($(docker image inspect -f '{{.Size}}' "$AGN_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
