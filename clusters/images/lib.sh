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

# mod_time MODULE@VERSION prints the module's publish time (RFC 3339) from the
# proxy's info file, for reproducible build dates.
mod_time() {
  "$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"Time": "\(.*\)",*$/\1/p' | head -1
}
mod_dir() {
  "$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' | head -1
}
