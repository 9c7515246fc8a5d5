#!/usr/bin/env bash
# Prints the README's accuracy section table: runs the validation suite
# (`clustersim validate --suite validate/suites --markdown`) and prints its markdown summary, one
# row per published source and one per shipped profile. Builds clustersim first when it is missing.
# Exit status: clustersim's (1 when a source is beyond its bound; the table is printed anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${CLUSTERSIM:-build/cli/clustersim}"
if [ ! -x "$bin" ]; then
  bash scripts/build.sh >&2
fi
"$bin" validate --suite validate/suites --markdown
