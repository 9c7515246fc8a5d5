#!/bin/sh
# Opens an HTML report in headless Chromium: fails on any console message or when the page's
# script did not run to its end (<body data-ready="yes">), and writes a screenshot next to it.
# Exit 77 (ctest: skipped) where Chromium is missing or cannot start here.
# usage: html_in_chromium.sh PAGE.html SHOT.png
page=$1 shot=$2
command -v chromium > /dev/null || { echo "chromium not installed (bash scripts/setup.sh installs it): skipped"; exit 77; }
[ -s "$page" ] || { echo "no page at $page"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run="timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr --v=0"
if ! $run --dump-dom "file://$page" > "$dir/dom.html" 2> "$dir/log.txt" || [ ! -s "$dir/dom.html" ]; then
  echo "chromium could not run headless here: skipped"; exit 77
fi
if grep -q ":CONSOLE" "$dir/log.txt"; then echo "console messages:"; grep ":CONSOLE" "$dir/log.txt"; exit 1; fi
grep -q 'data-ready="yes"' "$dir/dom.html" || { echo "the page's script did not finish"; exit 1; }
$run --window-size=1040,1400 --screenshot="$shot" "file://$page" > /dev/null 2>&1 || { echo "no screenshot"; exit 1; }
size=$(stat -c %s "$shot")
[ "$size" -gt 20000 ] || { echo "screenshot of $size bytes: a blank page"; exit 1; }
echo "opened cleanly; screenshot $shot ($size bytes)"
