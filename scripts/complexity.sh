#!/usr/bin/env bash
# complexity.sh BUILD_DIR FOLDER...: fails when a function in FOLDER's .cpp files is above cognitive
# complexity 40 (clang-tidy's readability-function-cognitive-complexity; lambdas count toward the
# function that holds them). The threshold is the project's: a function a reader can hold in
# their head. ctest runs it once per folder (label lint); it needs BUILD_DIR/compile_commands.json.
set -euo pipefail
threshold=40
build=$1; shift
cd "$(dirname "$0")/.."
command -v clang-tidy >/dev/null || { echo "complexity.sh: clang-tidy not found (scripts/setup.sh installs it)" >&2; exit 2; }
[ -f "$build/compile_commands.json" ] || { echo "complexity.sh: $build/compile_commands.json missing (configure with CMAKE_EXPORT_COMPILE_COMMANDS)" >&2; exit 2; }
config="{CheckOptions: [{key: readability-function-cognitive-complexity.Threshold, value: $threshold}]}"
found=0 files=0
for folder in "$@"; do
  while IFS= read -r f; do
    files=$((files + 1))
    out=$(clang-tidy -p "$build" --quiet --checks='-*,readability-function-cognitive-complexity' \
          --config="$config" "$f" 2>/dev/null | grep "warning: function" || true)
    if [ -n "$out" ]; then echo "$out"; found=$((found + $(wc -l <<<"$out"))); fi
  done < <(find "$folder" -name '*.cpp' | sort)
done
echo "complexity.sh: $files files in $*: $found functions above cognitive complexity $threshold"
[ "$found" -eq 0 ]
