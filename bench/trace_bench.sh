#!/usr/bin/env bash
# Time and peak memory of `simulate --trace` on the 64-GPU Llama 2 70B scenario with every rank
# simulated (issue 17's benchmark), against issue 36's target: at most 10 s and 1 GiB on the 2-core VM.
# Prints the run without a trace first (what the trace adds is the difference), then the JSON, the
# .json.gz and the Perfetto protobuf (.pftrace) trace, and the JSON for eight ranks. Exit status 1 when a trace run is over the target.
# usage: bash bench/trace_bench.sh [path/to/clustersim]   (default ./build/cli/clustersim)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/cli/clustersim}
[ -x "$bin" ] || { echo "trace_bench: build first (bash scripts/build.sh) or pass the binary" >&2; exit 2; }
scenario=scenarios/llama2-70b-64xh100.yaml
target_s=10
target_kb=1048576  # 1 GiB in KiB (/usr/bin/time reports KiB)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
printf '%-28s %9s %12s %12s  %s\n' run wall_s peak_MiB file_MB verdict
run() {  # name, trace file ('' for none), extra flags...
  local name=$1 file=$2; shift 2
  local flags=()
  [ -n "$file" ] && flags=(--trace "$tmp/$file")
  # Each run starts with the last one's file on disk: a multi-GB write still being flushed would
  # otherwise slow the next run's writes (the kernel throttles writers past its dirty-page limit).
  sync
  /usr/bin/time -v "$bin" simulate "$scenario" --ranks all --no-baseline "${flags[@]}" "$@" > "$tmp/out.txt" 2> "$tmp/time.txt"
  local wall kb size verdict=""
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$tmp/time.txt")
  kb=$(awk -F': ' '/Maximum resident set size/{print $2}' "$tmp/time.txt")
  size=-
  if [ -n "$file" ]; then
    size=$(awk -v b="$(stat -c %s "$tmp/$file")" 'BEGIN{printf "%.1f", b/1e6}')
    if awk -v w="$wall" -v t="$target_s" 'BEGIN{exit !(w <= t)}' && [ "$kb" -le "$target_kb" ]; then verdict="within ${target_s} s and 1 GiB"
    else verdict="OVER the target (${target_s} s, 1 GiB)"; status=1; fi
  fi
  printf '%-28s %9s %12.0f %12s  %s\n' "$name" "$wall" "$(awk -v k="$kb" 'BEGIN{print k/1024}')" "$size" "$verdict"
}
run "no trace" ""
run "--trace t.json" t.json
run "--trace t.json.gz" t.json.gz
run "--trace t.pftrace" t.pftrace
run "--trace-ranks 0-7" t07.json --trace-ranks 0-7
exit $status
