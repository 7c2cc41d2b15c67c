#!/usr/bin/env bash
# Builds the real proxies that stand as the Pods behind the LB in the
# front cells (fixtures.FrontTraefik, fixtures.FrontHAProxy), each fronting
# the echo server; nothing is pulled:
#   traefik  Traefik from its Go module (a static binary, FROM scratch);
#   haproxy  HAProxy from Debian bookworm, debootstrapped from this
#            machine's own apt mirror (as build-router.sh does for FRR).
# Each is cached by a key of its version and this recipe, and tagged
# zerodrop/<name>:dev, the name the fixtures use (fixtures.TraefikImage,
# fixtures.HAProxyImage). Usage: build-proxies.sh [traefik] [haproxy]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); run 'make host-setup' first"
recipe() { sed -n "/^# recipe $1 start/,/^# recipe $1 end/p" "$0"; }

# recipe traefik start
build_traefik() {
  # `go install traefik@version` is refused (its go.mod replaces three
  # modules), so it is built as the dependency of a scratch module that
  # repeats those replaces, read from Traefik's own go.mod.
  local ver="$TRAEFIK_VERSION" k out mod gomod img
  # The Go that builds it: the scratch module takes Traefik's go line,
  # which this machine's Go satisfies, so outside any module is the same.
  k=$(key traefik "$ver" "$(cd / && GOTOOLCHAIN=local "$GO" env GOVERSION)" "$(recipe traefik)")
  img="zerodrop/traefik:$ver-$k"
  if docker image inspect "$img" >/dev/null 2>&1; then
    log "traefik image: cached ($img)"
  else
    out="$CACHE/bin/traefik-$ver-$k"
    if ! done_ok "$out" "$k"; then
      rm -rf "$out"; mkdir -p "$out/root"
      mod="$CACHE/build/traefik-$ver"
      gomod="$(mod_dir "github.com/traefik/traefik/v3@$ver")/go.mod"
      [ -f "$gomod" ] || die "cannot fetch github.com/traefik/traefik/v3@$ver from the module proxy"
      rm -rf "$mod"; mkdir -p "$mod"
      {
        printf 'module zerodrop.local/traefikbuild\n\ngo %s\n\nrequire github.com/traefik/traefik/v3 %s\n\n' \
          "$(awk '$1 == "go" {print $2; exit}' "$gomod")" "$ver"
        # Replaces and excludes hold only in the main module.
        sed -n '/^replace (/,/^)/p;/^replace [^(]/p;/^exclude (/,/^)/p;/^exclude [^(]/p' "$gomod"
      } >"$mod/go.mod"
      printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/traefik/traefik/v3/cmd/traefik"\n' >"$mod/tools.go"
      (cd "$mod" && step "traefik-$ver-mod-tidy" "$GO" mod tidy)
      (cd "$mod" && step "traefik-$ver" env CGO_ENABLED=0 GOTOOLCHAIN=local "$GO" build -trimpath \
        -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$ver" \
        -o "$out/root/traefik" github.com/traefik/traefik/v3/cmd/traefik)
      mkdir -p "$out/root/tmp" && chmod 1777 "$out/root/tmp"
      mark_done "$out" "$k"
    fi
    step traefik-import bash -o pipefail -c "tar -C '$out/root' --numeric-owner -cf - . | docker import \
      --change 'ENTRYPOINT [\"/traefik\"]' --change 'LABEL dev.zerodrop.traefik-version=$ver' - '$img'"
  fi
  docker tag "$img" zerodrop/traefik:dev
  log "traefik image: $img (zerodrop/traefik:dev)"
}
# recipe traefik end

# recipe haproxy start
build_haproxy() {
  local suite=bookworm pkgs=haproxy,procps k img tarball
  debian_mirror >/dev/null
  k=$(key haproxy "$suite" "$pkgs" "$(debian_rootfs_recipe)" "$(recipe haproxy)")
  img="zerodrop/haproxy:$k"
  if docker image inspect "$img" >/dev/null 2>&1; then
    log "haproxy image: cached ($img)"
  else
    # The package's own configuration stays; the fixture's (a ConfigMap)
    # is mounted elsewhere and named on the command line.
    tarball="$(debian_rootfs haproxy "$suite" "$pkgs" haproxy "$k")"
    # No STOPSIGNAL: the kubelet's SIGTERM is HAProxy's hard stop in
    # master-worker mode (-W), as Debian's unit and the fixture run it;
    # the hardened fixture asks for the soft stop itself
    # (fixtures.FrontHAProxy).
    step haproxy-import docker import --change 'ENTRYPOINT ["/usr/sbin/haproxy"]' \
      --change 'LABEL dev.zerodrop.haproxy-version='"$(tar -xOf "$tarball" ./etc/zerodrop-haproxy-version)" "$tarball" "$img"
  fi
  docker tag "$img" zerodrop/haproxy:dev
  log "haproxy image: $img (zerodrop/haproxy:dev)"
}
# recipe haproxy end

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(traefik haproxy)
for w in "${want[@]}"; do
  case "$w" in
    traefik) build_traefik ;;
    haproxy) build_haproxy ;;
    *) die "unknown proxy $w (known: traefik haproxy)" ;;
  esac
done
