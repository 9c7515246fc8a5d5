#!/usr/bin/env bash
# Builds everything and runs every test that can run here (GPU tests skip without a device).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
