#!/usr/bin/env bash
# run.sh [OUT_DIR]: runs Kubernetes' own [Feature:LoadBalancer] e2e specs
# (built by build.sh) against a kind cluster, after loading the agnhost image
# into its nodes. Writes OUT_DIR/{e2e.log, junit_01.xml, report.json}.
# Env:
#   KUBECONFIG   default <repo>/out/kubeconfig (what make cluster writes)
#   CLUSTER      kind cluster name, default zerodrop
#   LB_CONFORMANCE_VERSION  the specs' Kubernetes version (selects the
#                build.sh cache); default the cluster's, KUBERNETES_VERSION or
#                the default in clusters/images/versions.sh
#   PROCS        parallel ginkgo processes, default 4 (1 = plain test binary)
#   TIMEOUT      whole-suite timeout, default 40m
#   LABELS       ginkgo label filter, default Feature:LoadBalancer
#   FOCUS/SKIP   optional ginkgo regexes
#   PROVIDER     default local (the LB specs have no provider skip in 1.34;
#                cloud-provider-kind's CI used --provider=aws only because
#                older releases skipped them unless the provider was a cloud)
#   CLIENT_SOURCE  the address the test process reaches LB addresses from,
#                default 198.51.100.1; "none" keeps the host's own. See below.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
. "$root/clusters/images/versions.sh"
VERSION="${LB_CONFORMANCE_VERSION:-$KUBERNETES_VERSION}"
CACHE="${ZERODROP_UPSTREAM_CACHE:-/var/cache/zerodrop/upstream-e2e}/$VERSION"
export KUBECONFIG="${KUBECONFIG:-$root/out/kubeconfig}"
CLUSTER="${CLUSTER:-zerodrop}"
PROCS="${PROCS:-4}"
TIMEOUT="${TIMEOUT:-40m}"
LABELS="${LABELS:-Feature:LoadBalancer}"
PROVIDER="${PROVIDER:-local}"
OUT="$(realpath -m "${1:-$root/out/lb-conformance/$(date +%Y%m%d-%H%M%S)}")"
mkdir -p "$OUT"
log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }

E2E="$CACHE/e2e-network.test"; GINKGO="$CACHE/ginkgo"
[ -x "$E2E" ] && [ -s "$CACHE/agnhost-image" ] || die "run build.sh $VERSION first"
AGN_IMAGE="$(cat "$CACHE/agnhost-image")"
docker image inspect "$AGN_IMAGE" >/dev/null 2>&1 || die "$AGN_IMAGE missing: run build.sh"
[ -s "$KUBECONFIG" ] || die "no kubeconfig at $KUBECONFIG"
KUBECTL="$CACHE/kubectl"
[ -x "$KUBECTL" ] || die "no kubectl in $CACHE: run build.sh $VERSION (the specs exec into Pods with it)"

# kind: a binary on PATH, else built once from the module kind's version
KIND="$(command -v kind || true)"
if [ -z "$KIND" ]; then
  kind_ver="${KIND_VERSION:-$(sed -n 's/^[[:space:]]*sigs\.k8s\.io\/kind \(v[^ ]*\).*/\1/p' "$root/go.mod" 2>/dev/null | head -1)}"
  kind_ver="${kind_ver:-v0.30.0}"
  KIND="$CACHE/kind-$kind_ver"
  if [ ! -x "$KIND" ]; then
    log "building kind $kind_ver"
    GOBIN="$CACHE/kindbin" go install "sigs.k8s.io/kind@$kind_ver"
    mv "$CACHE/kindbin/kind" "$KIND"; rmdir "$CACHE/kindbin"
  fi
fi
"$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER" || die "kind cluster $CLUSTER not found"
# Which LB the specs test: zerodrop's cloud LB (make cluster LB=cloud) or
# MetalLB. Said in the log, so a result file names its LB.
if [ "$(docker inspect -f '{{.State.Running}}' "$CLUSTER-cloud-lb" 2>/dev/null)" = true ]; then
  log "LB under test: zerodrop cloud LB (container $CLUSTER-cloud-lb)"
else
  log "LB under test: not zerodrop's cloud LB (no running $CLUSTER-cloud-lb container; MetalLB with make cluster LB=metallb)"
fi
# The test process is the LB's client, and "ETP Local: should work for
# type=LoadBalancer" fails any client address inside the nodes' /16
# (test/e2e/network/loadbalancer.go, getSubnetPrefix), which on kind the
# host's own 172.18.0.1 is. A cloud LB's clients are outside the node
# subnet, so the host reaches LB addresses from CLIENT_SOURCE: an address of
# TEST-NET-2 (RFC 5737, never routed anywhere) put on the kind bridge, with
# a route for the top /21 of the kind subnet (where harness/cluster and the
# cloud LB take their addresses, harness/lb KindVIPRange) that picks it as
# source. Replies come back through the nodes' default route, the bridge.
# Traffic still goes only to this machine's kind containers. Undone at exit.
CLIENT_SOURCE="${CLIENT_SOURCE:-198.51.100.1}"
if [ "$CLIENT_SOURCE" != none ]; then
  net_id="$(docker network inspect kind -f '{{.Id}}' 2>/dev/null)" || die "no docker network kind"
  bridge="br-${net_id:0:12}"
  subnet="$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' | tr ' ' '\n' | grep -m1 '\.' || true)"
  [ -n "$subnet" ] || die "kind network has no IPv4 subnet"
  IFS=./ read -r a b c d bits <<<"$subnet"
  (( bits <= 21 )) || die "kind subnet $subnet is smaller than the /21 the LB addresses are taken from"
  base=$(( (a<<24 | b<<16 | c<<8 | d) & ~((1<<(32-bits))-1) & 0xffffffff ))
  top=$(( base + (1<<(32-bits)) - 2048 ))
  vips="$(( top>>24 & 255 )).$(( top>>16 & 255 )).$(( top>>8 & 255 )).$(( top & 255 ))/21"
  ip addr replace "$CLIENT_SOURCE/32" dev "$bridge"
  ip route replace "$vips" dev "$bridge" src "$CLIENT_SOURCE"
  trap 'ip route del "$vips" dev "$bridge" 2>/dev/null; ip addr del "$CLIENT_SOURCE/32" dev "$bridge" 2>/dev/null' EXIT
  log "test process reaches LB addresses ($vips) from $CLIENT_SOURCE, outside the node subnet $subnet"
fi

log "loading $AGN_IMAGE into kind cluster $CLUSTER"
"$KIND" load docker-image --name "$CLUSTER" "$AGN_IMAGE" 2>&1 | tee "$OUT/kind-load.log"

args=(--kubeconfig="$KUBECONFIG" --provider="$PROVIDER" --report-dir="$OUT"
      --dump-logs-on-failure=false --disable-log-dump=true --kubectl-path="$KUBECTL")
gflags=(--label-filter="$LABELS" --timeout="$TIMEOUT" --json-report=report.json --no-color -v)
[ -z "${FOCUS:-}" ] || gflags+=(--focus="$FOCUS")
[ -z "${SKIP:-}" ] || gflags+=(--skip="$SKIP")
secs() { case "$1" in *h) echo $(( ${1%h} * 3600 ));; *m) echo $(( ${1%m} * 60 ));; *s) echo "${1%s}";; *) echo "$1";; esac; }
hard=$(( $(secs "$TIMEOUT") + 120 ))   # ginkgo's own timeout first; this one only if it hangs

log "running $LABELS specs: procs=$PROCS timeout=$TIMEOUT provider=$PROVIDER -> $OUT"
set +e
if [ "$PROCS" -gt 1 ]; then
  timeout --kill-after=60 "$hard" "$GINKGO" run --procs="$PROCS" --output-dir="$OUT" "${gflags[@]}" \
    "$E2E" -- "${args[@]}" >"$OUT/e2e.log" 2>&1
else
  bflags=()
  for f in "${gflags[@]}"; do
    case "$f" in --json-report=*) f="--json-report=$OUT/report.json";; esac
    bflags+=("--ginkgo.${f#--}")
  done
  timeout --kill-after=60 "$hard" "$E2E" "${args[@]}" "${bflags[@]}" >"$OUT/e2e.log" 2>&1
fi
rc=$?
set -e
tail -5 "$OUT/e2e.log"
log "exit $rc; results in $OUT"
exit $rc
