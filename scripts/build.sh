#!/usr/bin/env bash
# Configures and builds clustersim into build/ (ccache, Ninja, both cores). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
