#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) in build-fuzz and runs
# each for SECONDS (default 60) from the shipped inputs, one worker each, niced. A crash input is
# copied to tests/data/fuzz_regressions/<target>/ (replayed by ctest: fuzz_regressions.<target>)
# and the script exits 1. Each target's CPU time (user + system, from /usr/bin/time) is printed
# and appended to build-fuzz/cpu-seconds.tsv, since on a shared machine it falls short of the wall
# time. Longer runs: bash scripts/fuzz.sh 3600 (bench/ campaigns do).
#   bash scripts/fuzz.sh [SECONDS] [TARGET...|all]
# Without targets: the five that scripts/test.sh (CI) fuzzes for 30 s each. The Kineto, nccl-tests,
# DeepSpeed-config and Chakra readers' targets run by name, or all nine with `all`:
#   bash scripts/fuzz.sh 3600 kineto nccl_tests deepspeed_config chakra
# FUZZ_DIR=build-asan FUZZ_BUILD=0 fuzzes the targets scripts/sanitize.sh built (scripts/test.sh does).
# FUZZ_PARALLEL=1 runs the targets at once instead of one after another (each still one worker,
# niced): on a machine shared with builds they then soak up whatever CPU falls idle.
# FUZZ_NICE=0 runs them at normal priority: the load under which scripts/test.sh must still pass
# (issue 34: the test command on a fresh clone while other processes keep both cores busy).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FUZZ_DIR:-build-fuzz}
seconds=${1:-60}
shift || true
targets=("$@")
ci_targets=(scenario profile vtrain_table hf_config megatron_args)
[ ${#targets[@]} -gt 0 ] || targets=("${ci_targets[@]}")
[ "${targets[*]}" != all ] || targets=("${ci_targets[@]}" kineto nccl_tests deepspeed_config chakra)

san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# FUZZ_BUILD=0: fuzz the targets already built (a run continued while the tree changes).
[ "${FUZZ_BUILD:-1}" = 0 ] || {
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CUDA_COMPILER= \
  -DCLUSTERSIM_FUZZ=ON -DCLUSTERSIM_TESTS=OFF -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
nice cmake --build "$dir" -j "$(nproc)" --target $(printf '%s_fuzzer ' "${targets[@]}")
}

# Seeds: the inputs the project ships for each reader.
seeds() {
  case "$1" in
    scenario) ls scenarios/*.yaml tests/data/bad/*.yaml ;;
    profile) ls profiles/*.yaml ;;
    vtrain_table) ls validate/data/vtrain_a100_single_node.csv ;;
    hf_config) ls tests/data/hf/*.json ;;
    megatron_args) ls tests/data/megatron/*.sh ;;
    kineto) ls tests/data/kineto/*.json ;;
    nccl_tests) ls tests/data/nccl_tests/*.log ;;
    deepspeed_config) ls tests/data/deepspeed/*.json ;;
    chakra) ;;  # the valid and broken traces in tests/data/fuzz_regressions/chakra/ (always read)
  esac
}

fuzz_one() {
  local t=$1 status=0 corpus=$dir/corpus/$1 start execs cpu
  mkdir -p "$corpus" "$dir/artifacts/$t" "tests/data/fuzz_regressions/$t"
  seeds "$t" | xargs -I{} cp {} "$corpus/"
  start=$(date +%s)
  # Findings are kept by libFuzzer under artifacts/; -max_len 64 KiB covers every shipped input.
  if ! ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 /usr/bin/time -f "%U %S" -o "$dir/$t.cpu" \
        "${niced[@]}" "$dir/fuzz/${t}_fuzzer" "$corpus" \
        tests/data/fuzz_regressions/$t -max_total_time="$seconds" -max_len=65536 -timeout=60 -rss_limit_mb=4096 \
        -artifact_prefix="$dir/artifacts/$t/" -print_final_stats=1 >"$dir/$t.log" 2>&1; then
    if grep -q "libFuzzer: run interrupted" "$dir/$t.log"; then
      echo "fuzz: $t stopped early (SIGINT): no finding"  # its CPU time is still recorded below
    else
      status=1
      echo "fuzz: $t FOUND A CRASH ($dir/$t.log):"
      grep -m3 -E "ERROR|finding|runtime error" "$dir/$t.log" || true
    fi
  fi
  for a in "$dir/artifacts/$t"/*; do
    [ -e "$a" ] || continue
    case "$(basename "$a")" in
      slow-unit-*) continue ;;  # a note from libFuzzer, not a failure
      timeout-*)
        # libFuzzer's -timeout is wall time, which a niced worker on a busy machine can spend
        # without running: replayed, an input that finishes within 10 CPU-s is not kept.
        local took
        took=$(/usr/bin/time -f "%U %S" timeout 600 "$dir/fuzz/${t}_fuzzer" "$a" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}')
        if awk -v s="$took" 'BEGIN { exit !(s + 0 < 10) }'; then
          echo "fuzz: $t: $(basename "$a") takes $took CPU-s when replayed: the machine was busy; not kept"
          continue
        fi ;;
    esac
    cp "$a" "tests/data/fuzz_regressions/$t/"
  done
  execs=$(grep -m1 "stat::number_of_executed_units" "$dir/$t.log" | awk '{print $2}')
  cpu=$(tail -1 "$dir/$t.cpu" | awk '{printf "%.0f", $1 + $2}')
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$(( $(date +%s) - start ))" "$cpu" "${execs:-?}" >>"$dir/cpu-seconds.tsv"
  echo "fuzz: $t ran $(( $(date +%s) - start )) s ($cpu CPU-s), ${execs:-?} inputs, corpus $(ls "$corpus" | wc -l) files"
  return $status
}

niced=(nice)
[ "${FUZZ_NICE:-1}" != 0 ] || niced=()
status=0
if [ "${FUZZ_PARALLEL:-0}" = 1 ]; then
  pids=()
  for t in "${targets[@]}"; do fuzz_one "$t" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
else
  for t in "${targets[@]}"; do fuzz_one "$t" || status=1; done
fi
exit $status
