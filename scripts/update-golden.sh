#!/usr/bin/env bash
# Regenerates tests/golden/<scenario>.txt, the expected `clustersim simulate` report of every
# shipped scenario, which ctest (golden.<scenario>) compares byte for byte. Run it only when a
# change of the reports is intended, and commit the new files with that change (git diff shows
# what moved).
#   bash scripts/update-golden.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/cli/clustersim
[ -x "$bin" ] || { echo "update-golden: $bin not built (bash scripts/build.sh)" >&2; exit 1; }
mkdir -p tests/golden
for f in scenarios/*.yaml; do
  name=$(basename "$f" .yaml)
  "$bin" simulate "$f" > "tests/golden/$name.txt"
  echo "update-golden: tests/golden/$name.txt"
done
