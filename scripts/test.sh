#!/usr/bin/env bash
# Builds everything and runs every test that can run here (GPU tests skip without a device), then
# the ASan+UBSan job: scripts/sanitize.sh builds build-asan and runs the quick tests under it
# (on this 2-core machine: 11 min, 1,130 CPU-s for the build and 250 s for the tests, 2026-11-23;
# the whole script on a fresh clone, fuzzing included: 18.6 min).
# Last, each libFuzzer target (scripts/fuzz.sh: scenario, profile, vTrain table, HF config,
# Megatron arguments), built in build-asan by sanitize.sh, runs CLUSTERSIM_FUZZ_SECONDS (default
# 30) from the shipped inputs and the saved findings, all five at once; a new crash fails the run and its input is kept in
# tests/data/fuzz_regressions/. Longer campaigns: bash scripts/fuzz.sh 720.
# CLUSTERSIM_SANITIZE=0 and CLUSTERSIM_FUZZ_SECONDS=0 skip those jobs (a quick local check; CI
# runs both).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ "${CLUSTERSIM_SANITIZE:-1}" != 0 ]; then
  bash scripts/sanitize.sh
fi
if [ "${CLUSTERSIM_FUZZ_SECONDS:-30}" != 0 ]; then
  if [ "${CLUSTERSIM_SANITIZE:-1}" != 0 ]; then export FUZZ_DIR=build-asan FUZZ_BUILD=0; fi
  FUZZ_PARALLEL=1 bash scripts/fuzz.sh "${CLUSTERSIM_FUZZ_SECONDS:-30}"
fi
