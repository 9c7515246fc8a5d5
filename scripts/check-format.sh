#!/usr/bin/env bash
# Checks that every C++ source is formatted by .clang-format (clang-format 14, Debian 12's; other
# majors format some constructs differently). ctest runs it (hardening.clang_format); to fix:
#   bash scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
tool=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null && "$c" --version | grep -q "version 14\."; then tool=$c; break; fi
done
[ -n "$tool" ] || { echo "check-format: needs clang-format 14 (bash scripts/setup.sh installs it)"; exit 1; }
mapfile -t files < <(find bench cli common cost_models driver executor fuzz interop models planner \
  reports scenarios sim strategies taskgraph tests timeline topology training_run validate workflows \
  -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \) -not -path 'tests/data/*' | sort)
if [ "${1:-}" = --fix ]; then
  "$tool" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$tool" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ from .clang-format:"
  printf '  %s\n' "${bad[@]}"
  echo "fix: bash scripts/check-format.sh --fix"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
