#!/usr/bin/env bash
# Regenerates every golden output in one command: tests/golden/reports/<scenario>.txt (the
# `clustersim simulate` report of each shipped scenario) and tests/golden/errors/<name>.txt (the
# exact message and exit status of a broken input), which ctest (label golden) compares byte for
# byte. It rebuilds clustersim, deletes the goldens and reruns the golden tests in write mode
# (tests/golden/compare.cmake), so a golden whose scenario is gone disappears too. Run it when a
# change of the outputs is intended, or after a merge that brought one (models change often), then
# review `git diff tests/golden` and commit the goldens with that change.
#   bash scripts/update-golden.sh [BUILD_DIR]   (default build; configured by scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/CTestTestfile.cmake" ] || { echo "update-golden: $build is not configured (bash scripts/build.sh)" >&2; exit 1; }
cmake --build "$build" --target clustersim
rm -rf tests/golden/reports tests/golden/errors
mkdir -p tests/golden/reports tests/golden/errors
CLUSTERSIM_UPDATE_GOLDEN=1 ctest --test-dir "$build" -L golden -j "$(nproc)" --output-on-failure >/dev/null
echo "update-golden: $(ls tests/golden/reports | wc -l) reports and $(ls tests/golden/errors | wc -l) error messages written"
git status --short tests/golden
