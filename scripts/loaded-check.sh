#!/usr/bin/env bash
# The README's test command (scripts/test.sh) on fresh clones of one commit, one after the other,
# while stress-ng keeps every core busy at normal priority: the check that no test fails on time
# alone (docs/user-guide/hardening.md, "Under load").
#
#   bash scripts/loaded-check.sh [RUNS] [WORKDIR]
#
# RUNS defaults to 2, WORKDIR to /tmp/clustersim-loaded (clones WORKDIR/run-N, logs WORKDIR/run-N.log,
# the load every minute in WORKDIR/load.log, one line per run in WORKDIR/summary.txt). The clones
# share ccache without its per-directory hash (CCACHE_NOHASHDIR, CCACHE_BASEDIR=WORKDIR), so a run
# after the first rebuilds little: on 2 cores the first run takes about two hours under this load,
# each later one well under one. Exit status 1 at the first run that fails; the load stops with
# the script, however it ends.
set -euo pipefail
runs=${1:-2}
work=${2:-/tmp/clustersim-loaded}
case "$runs" in
  '' | *[!0-9]* | 0)
    echo "loaded-check: RUNS must be a positive whole number, got '$runs'" >&2
    exit 2
    ;;
esac
src="$(cd "$(dirname "$0")/.." && pwd)"
commit=$(git -C "$src" rev-parse HEAD)
if ! command -v stress-ng >/dev/null; then
  echo "loaded-check: installing stress-ng" >&2
  apt-get install -y stress-ng >/dev/null || {
    echo "loaded-check: stress-ng is missing and apt-get could not install it" >&2
    exit 2
  }
fi
mkdir -p "$work"
export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR="$work"

stress-ng --cpu "$(nproc)" --timeout 0 >/dev/null 2>&1 &
stress=$!
(while kill -0 "$stress" 2>/dev/null; do
  echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$work/load.log"
  sleep 60
done) &
watcher=$!
trap 'kill "$stress" "$watcher" 2>/dev/null || true; wait "$stress" 2>/dev/null || true' EXIT

echo "$(date -u +%FT%TZ) commit $commit, $runs run(s), $(nproc) cores under stress-ng" >>"$work/summary.txt"
for i in $(seq 1 "$runs"); do
  dir="$work/run-$i"
  rm -rf "$dir"
  git clone -q "$src" "$dir"
  git -C "$dir" checkout -q "$commit"
  start=$(date +%s)
  status=0
  (cd "$dir" && bash scripts/test.sh) >"$work/run-$i.log" 2>&1 || status=$?
  line="run $i: exit $status after $(($(date +%s) - start)) s; $(grep -E 'tests passed|tests failed' "$work/run-$i.log" | tr '\n' ' ')"
  echo "$(date -u +%FT%TZ) $line" | tee -a "$work/summary.txt"
  [ "$status" = 0 ] || exit 1
done
