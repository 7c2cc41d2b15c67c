#!/usr/bin/env bash
# Makes Docker usable for zerodrop's kind clusters on this host. Idempotent:
# every step checks first and only acts when needed; it prints what it changed.
#
#   1. apt packages the project needs (docker.io, debootstrap, ...) when missing
#   2. dockerd started in the background when `docker info` fails
#   3. the capability fix (clusters/capwrap as Docker's default runtime) only
#      when a plain `docker run --privileged` of a local probe image fails
#
# Environment: ZERODROP_CACHE (default /var/cache/zerodrop), GO (default go),
# DOCKERD_LOG (default $ZERODROP_CACHE/dockerd.log), CAPWRAP_BIN.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
CACHE="${ZERODROP_CACHE:-/var/cache/zerodrop}"
GO="${GO:-go}"
DOCKERD_LOG="${DOCKERD_LOG:-$CACHE/dockerd.log}"
CAPWRAP_BIN="${CAPWRAP_BIN:-/usr/local/lib/zerodrop/capwrap}"
DAEMON_JSON=/etc/docker/daemon.json
PROBE_IMAGE=zerodrop/probe:capwrap
changed=()

say() { echo "host-setup: $*"; }
die() { echo "host-setup: ERROR: $*" >&2; exit 1; }

mkdir -p "$CACHE"

# --- 1. packages -----------------------------------------------------------
need_pkgs=()
command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
command -v zstd >/dev/null 2>&1 || true
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "need root to install ${need_pkgs[*]} (run as root or install them yourself)"
  say "installing ${need_pkgs[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed; check the machine's apt sources"
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >"$CACHE/apt.log" 2>&1 \
    || { tail -20 "$CACHE/apt.log" >&2; die "apt-get install ${need_pkgs[*]} failed (log: $CACHE/apt.log)"; }
  changed+=("installed ${need_pkgs[*]}")
fi

# --- 2. dockerd --------------------------------------------------------------
docker_up() { timeout 10 docker info >/dev/null 2>&1; }

start_dockerd() {
  say "starting dockerd in the background (log: $DOCKERD_LOG)"
  # setsid: dockerd must outlive this script and not get the terminal's Ctrl-C.
  setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  local deadline=$((SECONDS + 60))
  until docker_up; do
    if [ $SECONDS -ge $deadline ]; then
      tail -20 "$DOCKERD_LOG" >&2
      die "dockerd did not answer 'docker info' within 60 s (log: $DOCKERD_LOG)"
    fi
    sleep 1
  done
  say "dockerd answers ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
}

stop_dockerd() {
  local pid
  pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
  [ -n "$pid" ] || die "dockerd runs but /var/run/docker.pid is missing; restart dockerd yourself so it reads $DAEMON_JSON"
  say "stopping dockerd (pid $pid) to apply $DAEMON_JSON"
  kill "$pid"
  local deadline=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || die "dockerd (pid $pid) did not stop within 60 s"
    sleep 1
  done
}

if ! docker_up; then
  if pgrep -x dockerd >/dev/null 2>&1; then
    die "a dockerd process runs but 'docker info' fails; see $DOCKERD_LOG or restart it"
  fi
  start_dockerd
  changed+=("started dockerd")
fi

# --- 3. privileged containers --------------------------------------------------
# The probe image is the capwrap binary itself (static Go), imported from a
# one-file tarball: no registry, no builder needed.
build_capwrap() {
  local out="$1"
  mkdir -p "$(dirname "$out")"
  local runc_path
  runc_path="$(command -v runc || echo /usr/sbin/runc)"
  (cd "$repo" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X main.realRuntime=$runc_path" -o "$out.tmp" ./clusters/capwrap) \
    || die "building clusters/capwrap failed"
  mv "$out.tmp" "$out"
}

ensure_probe_image() {
  docker image inspect "$PROBE_IMAGE" >/dev/null 2>&1 && return 0
  local d
  d="$(mktemp -d)"
  build_capwrap "$d/probe"
  tar -C "$d" -cf "$d/probe.tar" probe
  docker import "$d/probe.tar" "$PROBE_IMAGE" >/dev/null || { rm -rf "$d"; die "docker import of the probe image failed"; }
  rm -rf "$d"
}

probe() { timeout 60 docker run --rm --privileged --network none "$PROBE_IMAGE" /probe probe >"$CACHE/probe.log" 2>&1; }

# A wrapper installed by an earlier run is kept current with the source.
if [ -x "$CAPWRAP_BIN" ] && grep -q "$CAPWRAP_BIN" "$DAEMON_JSON" 2>/dev/null; then
  build_capwrap "$CAPWRAP_BIN.new"
  if cmp -s "$CAPWRAP_BIN.new" "$CAPWRAP_BIN"; then rm -f "$CAPWRAP_BIN.new"
  else mv "$CAPWRAP_BIN.new" "$CAPWRAP_BIN"; changed+=("updated $CAPWRAP_BIN from clusters/capwrap"); fi
fi

ensure_probe_image
if probe; then
  say "privileged containers work"
else
  if ! grep -q "apply caps" "$CACHE/probe.log"; then
    cat "$CACHE/probe.log" >&2
    die "docker run --privileged of a local probe image failed for a reason the capability fix does not cover (above)"
  fi
  say "docker run --privileged fails ($(grep -o 'unable to apply caps[^"]*' "$CACHE/probe.log" | head -1)); installing the capability wrapper"
  build_capwrap "$CAPWRAP_BIN"
  res="$("$CAPWRAP_BIN" daemon-json "$DAEMON_JSON" zerodrop-capwrap "$CAPWRAP_BIN")" || die "could not register capwrap in $DAEMON_JSON"
  changed+=("built $CAPWRAP_BIN")
  if [ "$res" = changed ]; then
    changed+=("registered zerodrop-capwrap as default runtime in $DAEMON_JSON")
  fi
  stop_dockerd
  start_dockerd
  changed+=("restarted dockerd")
  probe || { cat "$CACHE/probe.log" >&2; die "docker run --privileged still fails with the capability wrapper (see above)"; }
  say "privileged containers work through $CAPWRAP_BIN"
fi

# kind's known issue: every node runs systemd, containerd and kubelet, each
# taking inotify instances; Debian's default of 128 per user runs out at
# about one cluster, and then kube-proxy and flannel die with "too many open
# files". Raised only when lower than kind's documented values.
raise_sysctl() {
  local key="$1" want="$2" have
  have="$(sysctl -n "$key" 2>/dev/null || echo 0)"
  if [ "$have" -lt "$want" ]; then
    sysctl -qw "$key=$want" || die "could not raise $key to $want (kind nodes need it)"
    changed+=("raised $key from $have to $want")
  fi
}
raise_sysctl fs.inotify.max_user_instances 512
raise_sysctl fs.inotify.max_user_watches 524288

# Disk space where Docker keeps its data: a kind node that cannot unpack
# an image's layer leaves its Pods in CreateContainerError ("no space left
# on device") and the cluster never comes up. Checked, never cleaned: what
# to remove is the user's call.
docker_root="$(docker info -f '{{.DockerRootDir}}' 2>/dev/null || echo /var/lib/docker)"
free_gb="$(df -P -B1G "$docker_root" 2>/dev/null | awk 'NR == 2 {print $4}' || true)"
if [ -n "$free_gb" ]; then
  how="free some: docker system df and docker image prune -a (unused images), go clean -cache (Go's build cache; a node image build fills it by about 10 GB per Kubernetes release), old runs under out/"
  if [ "$free_gb" -lt "${ZERODROP_MIN_FREE_GB:-4}" ]; then
    die "only ${free_gb} GB free at $docker_root; a kind cluster needs a few GB to unpack its images (ZERODROP_MIN_FREE_GB=${ZERODROP_MIN_FREE_GB:-4}); $how"
  elif [ "$free_gb" -lt 15 ]; then
    say "warning: ${free_gb} GB free at $docker_root; building a node image for a new Kubernetes release may run out; $how"
  fi
fi

if [ "${#changed[@]}" -eq 0 ]; then
  say "nothing to change"
else
  for c in "${changed[@]}"; do say "changed: $c"; done
fi
