#!/usr/bin/env bash
# Regenerates docs/html-report.png, the HTML report screenshot docs/user-guide/outputs.md shows: simulates the
# 64-GPU Llama 2 70B scenario with --html and photographs the page in headless Chromium.
# usage: bash scripts/screenshot.sh [path/to/clustersim]   (default ./build/cli/clustersim)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/cli/clustersim}
[ -x "$bin" ] || { echo "screenshot: build first (bash scripts/build.sh) or pass the binary" >&2; exit 2; }
command -v chromium >/dev/null || { echo "screenshot: chromium is missing (bash scripts/setup.sh installs it)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" simulate scenarios/llama2-70b-64xh100.yaml --html "$tmp/report.html" > /dev/null
mkdir -p docs
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1040,2000 \
  --screenshot="$PWD/docs/html-report.png" "file://$tmp/report.html" > /dev/null 2>&1
echo "wrote docs/html-report.png ($(stat -c %s docs/html-report.png) bytes)"
