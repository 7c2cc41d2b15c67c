#!/usr/bin/env bash
# make e2e / make e2e-smoke / make test-workload: the main job (or your own
# workload, `zerodrop test`) on a real cluster, from a bare machine.
# Usage: run-e2e.sh [all|smoke|workload]
#   FILES="deploy.yaml svc.yaml" the manifests of `workload`; ARGS="..." more
#                           `zerodrop test` flags (--lb-profile, --scenario)
#   PROVIDER=kind|existing  KEEP_CLUSTER=1  ZERODROP_OUT=dir
#   LB=all|metallb|cloud    the LB implementations the cluster runs (default:
#                           all for the whole matrix, metallb for the smoke)
#   LB_PROFILE=gcp-nlb,...  the cloud LB's columns (default: every profile
#                           it runs); SHARD=2/4 runs the second of 4 parts
#   ZERODROP_WITNESSES=8    witnesses per disruption (default: the load budget,
#                           900 requests/s per CPU, over ZERODROP_RATE, 50); a
#                           scenario with more cells repeats its disruption
#   ZERODROP_RATE=50        requests/s of a documentation cell
#   ZERODROP_ASSERTION_RATE=25  of an assertion cell and a control (default:
#                           half of ZERODROP_RATE)
#   ZERODROP_KEEPALIVE=off  a connection per request in every cell
#   ZERODROP_PAUSE_TRACE=N  keep execution traces of the test process's pauses
#   ZERODROP_REALTIME=off   leave the load in the default scheduler
#   ZERODROP_REMEASURE=N    measure a cell the load generator spoiled again, up to N times (default 1)
#   CLUSTER_NAME=zerodrop   ZERODROP_KUBECONFIG=out/kubeconfig
#   LABELS='...'            a Ginkgo label filter selecting cells, spaces allowed
#                           (e.g. LABELS='scenario:control || scenario:drain-node')
#   GINKGO_ARGS="..." passes extra Ginkgo flags (e.g. --ginkgo.focus=drain),
#                           split at spaces: every word must be a flag.
#   KUBERNETES_VERSIONS=v1.35.8,v1.36.4,v1.37.2 runs the selection once per
#   version, one cluster at a time (each made and removed), into
#   ZERODROP_OUT/<version>, and merges them with `zerodrop report` into
#   ZERODROP_OUT/report (the matrix gets one column per version).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"
what="${1:-all}"
PROVIDER="${PROVIDER:-kind}"
if [ "$what" = smoke ]; then LB="${LB:-metallb}"; else LB="${LB:-all}"; fi
GO="${GO:-go}"
export ZERODROP_CACHE="${ZERODROP_CACHE:-/var/cache/zerodrop}"
export ZERODROP_OUT="${ZERODROP_OUT:-$repo/out/e2e}"
export CLUSTER_NAME="${CLUSTER_NAME:-zerodrop}"
export ZERODROP_KUBECONFIG="${ZERODROP_KUBECONFIG:-$repo/out/kubeconfig}"
t0=$SECONDS
say() { printf '[e2e %4ds] %s\n' "$((SECONDS - t0))" "$*"; }

# Validate before anything is built or created.
case "$what" in all|smoke|workload) ;; *) echo "run-e2e: unknown selection '$what': want all, smoke or workload" >&2; exit 2 ;; esac
if [ "$what" = workload ]; then
  [ -n "${FILES:-}" ] || { echo "run-e2e: workload needs FILES=\"your manifests\" (files, directories)" >&2; exit 2; }
  make -s build
  # Bad manifests fail here, before a cluster is made: nothing left behind.
  # shellcheck disable=SC2086
  "$repo/bin/zerodrop" test --dry-run ${ARGS:-} $FILES >/dev/null
fi
case "$PROVIDER" in kind|existing) ;; *) echo "run-e2e: unknown PROVIDER=$PROVIDER: known providers are kind, existing" >&2; exit 2 ;; esac
case "$LB" in metallb|cloud|all) ;; *) echo "run-e2e: unknown LB=$LB: known load balancers are all, metallb, cloud" >&2; exit 2 ;; esac
if [ -n "${SHARD:-}" ] && ! [[ "$SHARD" =~ ^[1-9][0-9]*/[1-9][0-9]*$ ]]; then
  echo "run-e2e: SHARD=$SHARD: want I/N with 1 <= I <= N (e.g. 2/4)" >&2; exit 2
fi
export PROVIDER LB

# The plan comes first, before any cluster step: the cells, disruptions,
# Deployments and minutes this selection will take (zerodrop plan), and the
# test binary's timeout follows from it, so no run outgrows its own timeout.
plan_filter=""
if [ "$what" = smoke ]; then plan_filter=smoke; fi
# GINKGO_ARGS is split at spaces, so a label filter with spaces in it would
# reach Ginkgo cut short and run fewer cells than asked, silently: refuse
# any word that is not a flag.
read -r -a ginkgo_args <<<"${GINKGO_ARGS:-}"
for w in "${ginkgo_args[@]}"; do
  case "$w" in
    -*) ;;
    *) echo "run-e2e: GINKGO_ARGS is split at spaces, and '$w' is not a flag; put a label filter with spaces in LABELS='...' instead (e.g. LABELS='scenario:control || scenario:drain-node')" >&2; exit 2 ;;
  esac
done
case "${GINKGO_ARGS:-}" in
  *label-filter=*) plan_filter="$(printf '%s\n' "$GINKGO_ARGS" | sed -n 's/.*label-filter=\([^ ]*\).*/\1/p')" ;;
esac
if [ -n "${LABELS:-}" ]; then
  case "$plan_filter" in
    "") plan_filter="$LABELS" ;;
    *) echo "run-e2e: a label filter both in LABELS and in GINKGO_ARGS (or the smoke target's own); give it once" >&2; exit 2 ;;
  esac
fi
if [ "$what" != workload ] && [ -z "${KUBERNETES_VERSIONS:-}" ]; then
  make -s build
  say "plan (label filter: ${plan_filter:-none})"
  "$repo/bin/zerodrop" plan --label-filter "$plan_filter"
  timeout_min="$("$repo/bin/zerodrop" plan --label-filter "$plan_filter" --timeout-minutes)"
fi

if [ -n "${KUBERNETES_VERSIONS:-}" ]; then
  [ "$PROVIDER" = kind ] || { echo "run-e2e: KUBERNETES_VERSIONS needs PROVIDER=kind (an existing cluster has one version)" >&2; exit 2; }
  IFS=', ' read -r -a versions <<<"$KUBERNETES_VERSIONS"
  for v in "${versions[@]}"; do
    [[ "$v" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "run-e2e: KUBERNETES_VERSIONS: '$v' is not vMAJOR.MINOR.PATCH (e.g. v1.37.2)" >&2; exit 2; }
  done
  "$repo/clusters/host-setup.sh" >/dev/null
  if [ -n "$(docker ps -aq --filter "label=io.x-k8s.kind.cluster=$CLUSTER_NAME")" ]; then
    echo "run-e2e: cluster $CLUSTER_NAME exists; KUBERNETES_VERSIONS makes one cluster per version: remove it first (make cluster-down)" >&2
    exit 2
  fi
  base="$ZERODROP_OUT"
  worst=0
  dirs=()
  for v in "${versions[@]}"; do
    say "Kubernetes $v -> $base/$v"
    rc=0
    KUBERNETES_VERSIONS="" KUBERNETES_VERSION="$v" ZERODROP_OUT="$base/$v" "$0" "$what" || rc=$?
    say "Kubernetes $v: exit $rc"
    [ "$rc" -gt "$worst" ] && worst=$rc
    [ -f "$base/$v/report.json" ] && dirs+=("$base/$v")
  done
  if [ "${#dirs[@]}" -gt 0 ]; then
    make -s build
    say "merging ${#dirs[@]} version(s) -> $base/report"
    "$repo/bin/zerodrop" report --out "$base/report" "${dirs[@]}" || { rc=$?; [ "$rc" -gt "$worst" ] && worst=$rc; }
  fi
  say "exit $worst over ${#versions[@]} version(s); evidence in $base"
  exit "$worst"
fi

cluster_existed=0
if [ "$PROVIDER" = kind ]; then
  # Docker first: with the daemon down, a cluster left on disk would look
  # absent here and then be reused (and removed) as if this run made it.
  say "host set-up"
  "$repo/clusters/host-setup.sh"
  if [ -n "$(docker ps -aq --filter "label=io.x-k8s.kind.cluster=$CLUSTER_NAME")" ]; then
    cluster_existed=1
  fi
fi
teardown() {
  local rc=$?
  if [ -n "${autogroup_nice:-}" ]; then echo "$autogroup_nice" >"/proc/$$/autogroup" 2>/dev/null || true; fi
  if [ "$PROVIDER" = kind ] && [ "$cluster_existed" = 0 ] && [ "${KEEP_CLUSTER:-0}" != 1 ]; then
    say "removing the cluster this run created (KEEP_CLUSTER=1 keeps it)"
    "$repo/clusters/cluster.sh" down || say "cluster-down failed: run 'make cluster-down'"
  elif [ "$PROVIDER" = kind ]; then
    say "keeping the cluster ('make cluster-down' removes it)"
  fi
  # The cells that failed the run, last, where a CI log's tail shows them
  # (the suite writes verdicts.txt next to report.json as it goes).
  if [ "$rc" != 0 ] && [ -s "$ZERODROP_OUT/verdicts.txt" ] && grep -q '^! ' "$ZERODROP_OUT/verdicts.txt"; then
    say "cells that failed the run ($ZERODROP_OUT/verdicts.txt):"
    grep -m 20 '^! ' "$ZERODROP_OUT/verdicts.txt" | cut -c1-600 || true
  fi
  say "exit $rc; evidence in $ZERODROP_OUT"
  exit $rc
}
mkdir -p "$ZERODROP_OUT"
rm -f "$ZERODROP_OUT/verdicts.txt" # the teardown's failing cells are this run's
trap teardown EXIT
trap 'exit 130' INT TERM

say "cluster (PROVIDER=$PROVIDER LB=$LB)"
# The cluster takes one default profile for the cloud LB; every Service the
# suite makes names its own, so the first of the list the cloud LB runs will
# do (metallb-bgp and kube-vip-arp/-bgp are columns of other implementations,
# not profiles of the cloud LB).
first_profile=""
IFS=, read -ra listed <<<"${LB_PROFILE:-}"
for p in "${listed[@]}"; do
  case "$p" in metallb-bgp | kube-vip-arp | kube-vip-bgp) ;; *) first_profile="$p"; break ;; esac
done
LB_PROFILE="$first_profile" "$repo/clusters/cluster.sh" up
if [ "$PROVIDER" = kind ]; then
  say "echo server image"
  make -s image
  # The fronts' cells (Traefik, HAProxy as the Pods) need their images;
  # the smoke has none of them. Cached after the first build (~6 min).
  if [ "$what" = all ]; then
    say "proxy images (Traefik, HAProxy)"
    make -s proxy-images
  fi
fi
# The load generator runs in the test process (or zerodrop test) and shares
# 2 cores with the kind nodes; a node being added can starve it past its
# send-lag bound, which makes the run ERROR (not measured) rather than
# wrong. The process puts itself in a real-time class once the cluster is
# up (ZERODROP_REALTIME); where the kernel refuses that, a higher nice
# (root only) is what keeps the instrument ahead of the system it measures,
# and it also weighs the build of the test binary.
prio=()
if nice -n -5 true 2>/dev/null; then prio=(nice -n -5); fi
# nice alone orders tasks within one session: with autogroup scheduling
# (sched(7), "The autogroup feature"; on where kernel.sched_autogroup_enabled
# is 1 and the instrument sits in the root cpu cgroup, as here) the whole
# session weighs as one task of nice 0 against the /docker group that runs
# every kind node. The session's own nice gives the instrument its weight;
# it is put back when this script ends.
autogroup_nice=""
if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] && [ -w "/proc/$$/autogroup" ]; then
  autogroup_nice="$(sed -n 's/.* nice //p' "/proc/$$/autogroup")"
  if echo -10 >"/proc/$$/autogroup" 2>/dev/null; then
    say "instrument priority: nice -5 within a session of nice -10 (autogroup; was $autogroup_nice)"
  else
    autogroup_nice=""
  fi
fi
if [ "$what" = workload ]; then
  say "your workload ($FILES) -> $ZERODROP_OUT"
  # shellcheck disable=SC2086
  "${prio[@]}" "$repo/bin/zerodrop" test --out "$ZERODROP_OUT" --kubeconfig "$ZERODROP_KUBECONFIG" \
    --cluster-name "$CLUSTER_NAME" --provider "$PROVIDER" ${ARGS:-} $FILES
  exit $?
fi
filter=()
if [ "$what" = smoke ]; then filter=(-ginkgo.label-filter=smoke); fi
if [ -n "${LABELS:-}" ]; then filter=("-ginkgo.label-filter=$LABELS"); fi
say "scenarios ($what) -> $ZERODROP_OUT"
# shellcheck disable=SC2086
say "timeout ${timeout_min}m (from the plan)"
"${prio[@]}" "$GO" test -tags e2e -count=1 -timeout "${timeout_min}m" ./suites/ -v -args \
  -ginkgo.v -ginkgo.junit-report="$ZERODROP_OUT/junit.xml" "${filter[@]}" ${GINKGO_ARGS:-}
say "scenarios done"
if [ "$what" = smoke ]; then
  # zerodrop as other people's suites use it (examples/): the library's
  # UnderLoad from plain go test and from an e2e-framework feature, each
  # rolling its own workload on this cluster. One package at a time (-p 1):
  # each runs its own load. Their run files go beside the suite's evidence.
  examples_out="${ZERODROP_OUT%/}-examples"
  rm -rf "$examples_out"
  say "examples (go test, e2e-framework) -> $examples_out"
  ZERODROP_EXAMPLES_OUT="$examples_out" "${prio[@]}" "$GO" test -tags e2e -count=1 -p 1 -timeout 15m -v ./examples/...
  say "examples done"
fi
