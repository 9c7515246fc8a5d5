#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) in build-fuzz and runs
# each for SECONDS (default 60) from the shipped inputs, one worker each, niced. A crash input is
# copied to tests/data/fuzz_regressions/<target>/ (replayed by ctest: fuzz_regressions.<target>)
# and the script exits 1. Longer runs: bash scripts/fuzz.sh 3600 (bench/ campaigns do).
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario profile vtrain_table hf_config megatron_args)

san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CUDA_COMPILER= \
  -DCLUSTERSIM_FUZZ=ON -DCLUSTERSIM_TESTS=OFF -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
nice cmake --build build-fuzz -j "$(nproc)" --target $(printf '%s_fuzzer ' "${targets[@]}")

# Seeds: the inputs the project ships for each reader.
seeds() {
  case "$1" in
    scenario) ls scenarios/*.yaml tests/data/bad/*.yaml ;;
    profile) ls profiles/*.yaml ;;
    vtrain_table) ls validate/data/vtrain_a100_single_node.csv ;;
    hf_config) ls tests/data/hf/*.json ;;
    megatron_args) ls tests/data/megatron/*.sh ;;
  esac
}

status=0
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus" "build-fuzz/artifacts/$t" "tests/data/fuzz_regressions/$t"
  seeds "$t" | xargs -I{} cp {} "$corpus/"
  start=$(date +%s)
  # Findings are kept by libFuzzer under artifacts/; -max_len 64 KiB covers every shipped input.
  if ! ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 nice "build-fuzz/fuzz/${t}_fuzzer" "$corpus" \
        tests/data/fuzz_regressions/$t -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix="build-fuzz/artifacts/$t/" -print_final_stats=1 >"build-fuzz/$t.log" 2>&1; then
    status=1
    echo "fuzz: $t FOUND A CRASH (build-fuzz/$t.log):"
    grep -m3 -E "ERROR|finding|runtime error" "build-fuzz/$t.log" || true
  fi
  for a in "build-fuzz/artifacts/$t"/*; do
    [ -e "$a" ] && cp "$a" "tests/data/fuzz_regressions/$t/"
  done
  execs=$(grep -m1 "stat::number_of_executed_units" "build-fuzz/$t.log" | awk '{print $2}')
  echo "fuzz: $t ran $(( $(date +%s) - start )) s, ${execs:-?} inputs, corpus $(ls "$corpus" | wc -l) files"
done
exit $status
