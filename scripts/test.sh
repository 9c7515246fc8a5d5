#!/usr/bin/env bash
# Builds everything and runs every test that can run here (GPU tests skip without a device), then
# the quick tests again under ASan+UBSan (scripts/sanitize.sh; CLUSTERSIM_SANITIZE=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
[ "${CLUSTERSIM_SANITIZE:-1}" = 0 ] && exit 0
# CI allows 30 minutes for this script; the sanitizer job is estimated at 13-14 of them on 2 cores
# (README, Hardening). It gets what is left less a minute, and says so if that is not enough.
left=$(( 29 * 60 - (SECONDS - start) ))
if [ "$left" -lt 60 ]; then
  echo "test.sh: no time left in CI's 30 minutes for scripts/sanitize.sh" >&2
  exit 1
fi
rc=0
timeout "$left" bash scripts/sanitize.sh || rc=$?
if [ "$rc" = 124 ]; then
  echo "test.sh: scripts/sanitize.sh did not finish in the ${left} s left of CI's 30 minutes" >&2
fi
exit "$rc"
