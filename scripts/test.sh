#!/usr/bin/env bash
# Builds everything and runs every test that can run here (GPU tests skip without a device), then
# the ASan+UBSan job: scripts/sanitize.sh builds build-asan and runs the quick tests under it
# (on this 2-core machine: 11 min, 1,130 CPU-s for the build and 250 s for the tests, 2026-11-23).
# CLUSTERSIM_SANITIZE=0 skips that job (a quick local check; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ "${CLUSTERSIM_SANITIZE:-1}" != 0 ]; then
  bash scripts/sanitize.sh
fi
