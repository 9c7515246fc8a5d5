#!/usr/bin/env bash
# Issue 15's campaign on one GPU (H100 or H200), in one command and under 25 minutes:
#   scripts/gpu-validate.sh OUTDIR
# Stages, each with its own time budget (a stage past its budget is stopped and the campaign goes
# on; the total never passes 25 minutes):
#   1 environment   nvidia-smi (GPU, driver, clocks, power), CUDA / cuBLASLt / NCCL versions
#   2 build         the cuda backend: the carried bundle build-gpu/dist (see --bundle) when it
#                   runs here, else a build into build-gpu (needs cmake, ninja and the Debian -dev
#                   packages); `ldd` must find every library
#   3 gpu tests     ctest -L gpu (or, from the bundle, the same gtest binary directly)
#   4 calibrate     clustersim calibrate --backend cuda --out OUTDIR/profiles/<gpu>.yaml
#   5 execute       GPT-2 small and GPT-2 Large on one GPU, and seed 002's single-GPU batch sweep
#                   (GPT-2 Large, micro-batch = global batch = 1, 4, 8, 16, 32, seq 1024, at amp_fp16
#                   and tf32: the seed's two readings)
#   6 validate      validate --measured for each run, with the new profile; summary.tsv
# One GPU cannot host two NCCL ranks: multi-GPU figures stay those of the published measurements
# (seed 002's 2x H100 runs); the multi-rank executor is tested on the cpu backend under mpirun.
#
# Output, laid out to be copied into the repository as it is:
#   OUTDIR/profiles/<gpu>.yaml (+ .raw.csv, calibrate.txt)      -> profiles/
#   OUTDIR/validate/measurements/<scenario>/{timeline.json, report.json, execute.txt,
#       validate.txt, side_by_side.json}, .../scenarios/*.yaml   -> validate/measurements/
#   OUTDIR/environment.txt, gpu-tests.txt, summary.tsv, campaign.log
#
# Options:
#   --dry-run     every stage with --backend cpu on small cpu scenarios (no GPU, no build; CI runs
#                 it: tests/cmake/gpu_campaign.cmake). Also CLUSTERSIM_DRY_RUN=1.
#   --bundle      on a build machine (no GPU needed): configure build-gpu with
#                 -DCLUSTERSIM_PORTABLE=ON, build clustersim and the gpu tests, and copy them with
#                 the non-system shared libraries they need into build-gpu/dist (bin/, lib/) for a
#                 GPU machine without the Debian packages; carry that folder there.
# Environment: CLUSTERSIM_BIN / CLUSTERSIM_GPU_TESTS (binaries to use), CLUSTERSIM_SWEEP (batch
# sizes, default "1 4 8 16 32"; dry run "1 2"), CLUSTERSIM_BUDGET_S (total, default 1500),
# CLUSTERSIM_SWEEP_PRECISIONS (default "amp_fp16 tf32"), CLUSTERSIM_STAGES (which of stages 3-6 to run, default "3 4 5"; 5 means execute and validate;
# 1 and 2 always run), CLUSTERSIM_PROFILE (a profile to validate with when stage 4 is not run,
# e.g. one measured by an earlier call: device time comes in calls of at most 10 minutes).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DRY="${CLUSTERSIM_DRY_RUN:-0}"
BUNDLE=0
OUT=""
for a in "$@"; do
  case "$a" in
    --dry-run) DRY=1 ;;
    --bundle) BUNDLE=1 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    -*) echo "gpu-validate: unknown option '$a' (valid: --dry-run, --bundle, --help)" >&2; exit 2 ;;
    *) [ -z "$OUT" ] || { echo "gpu-validate: one OUTDIR, got a second: '$a'" >&2; exit 2; }; OUT="$a" ;;
  esac
done

# --- the bundle (build machine) ----------------------------------------------------------------
if [ "$BUNDLE" = 1 ]; then
  set -e
  cd "$ROOT"
  bash scripts/setup.sh
  [ -x /usr/local/cuda/bin/nvcc ] || { echo "gpu-validate --bundle: no nvcc under /usr/local/cuda: the cuda backend cannot be built here" >&2; exit 1; }
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLUSTERSIM_PORTABLE=ON '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' >/dev/null
  cmake --build build-gpu -j "$(nproc)" --target clustersim clustersim_cuda clustersim_gpu_tests
  DIST=build-gpu/dist
  rm -rf "$DIST" && mkdir -p "$DIST/bin" "$DIST/lib"
  # The backends are plugins the binaries load from beside themselves (executor/plugin_loader.h).
  for b in build-gpu/cli/clustersim build-gpu/cli/libclustersim_cuda.so build-gpu/cli/libclustersim_cpu.so build-gpu/tests/clustersim_gpu_tests; do
    strip --strip-debug -o "$DIST/bin/$(basename "$b")" "$b"
  done
  # Every shared library the binaries load except glibc's own, the NVIDIA driver's and the CUDA
  # toolkit's (cuBLASLt and NCCL are hundreds of MB: the GPU machine has them under /usr/local/cuda).
  for lib in $(ldd "$DIST/bin/clustersim" "$DIST/bin/libclustersim_cuda.so" "$DIST/bin/libclustersim_cpu.so" "$DIST/bin/clustersim_gpu_tests" | awk '/=> \//{print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libcudart*|libcublas*|libnccl*) continue ;;
    esac
    case "$lib" in /usr/local/cuda*) continue ;; esac
    strip --strip-unneeded -o "$DIST/lib/$(basename "$lib")" "$lib"
  done
  echo "bundle: $DIST ($(du -sh "$DIST" | cut -f1)):"
  ls -la "$DIST/bin" "$DIST/lib" | sed 's/^/  /'
  # The binaries find dist/lib by their RUNPATH ($ORIGIN/../lib); the libraries' own dependencies
  # (Gloo's hiredis, ibverbs) by LD_LIBRARY_PATH, which the campaign sets for the bundle.
  echo "LD_LIBRARY_PATH=$DIST/lib ldd $DIST/bin/clustersim $DIST/bin/libclustersim_cuda.so:"
  LD_LIBRARY_PATH="$DIST/lib" ldd "$DIST/bin/clustersim" "$DIST/bin/libclustersim_cuda.so" | sed 's/^/  /'
  echo "On the GPU machine: carry build-gpu/dist and run  bash scripts/gpu-validate.sh OUTDIR"
  exit 0
fi

[ -n "$OUT" ] || { echo "usage: scripts/gpu-validate.sh [--dry-run | --bundle] OUTDIR" >&2; exit 2; }
mkdir -p "$OUT" || { echo "gpu-validate: cannot create $OUT" >&2; exit 2; }
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/campaign.log"
: > "$LOG"
TOTAL_BUDGET="${CLUSTERSIM_BUDGET_S:-1500}"   # 25 minutes
STAGES="${CLUSTERSIM_STAGES:-3 4 5}"
source "$ROOT/scripts/lib/stages.sh"

if [ "$DRY" = 1 ]; then
  MODE="dry run (cpu backend, small cpu scenarios; no GPU used)"
  BACKEND=cpu
  SWEEP="${CLUSTERSIM_SWEEP:-1 2}"
else
  MODE="GPU campaign (cuda backend)"
  BACKEND=cuda
  SWEEP="${CLUSTERSIM_SWEEP:-1 4 8 16 32}"
fi
say "gpu-validate: $MODE -> $OUT; total budget ${TOTAL_BUDGET}s"
say "note: one GPU cannot host two NCCL ranks; multi-GPU validation stays with the published measurements (seed 002's 2x H100 runs)"

# --- 1 environment ---------------------------------------------------------------------------
ENVF="$OUT/environment.txt"
environment() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "host: $(uname -srm), $(nproc) cores"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu,persistence_mode --format=csv
    nvidia-smi -q -d CLOCK,POWER,PERFORMANCE | sed -n '1,80p'
  else
    echo "nvidia-smi: not found (no NVIDIA driver)"
  fi
  [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -2
  for l in /usr/local/cuda/lib64/libcublasLt.so /usr/local/cuda/lib64/libnccl.so /usr/local/cuda/lib64/libcudart.so; do
    [ -e "$l" ] && echo "library: $l -> $(readlink -f "$l")"
  done
  grep -m1 -h '#define NCCL_VERSION_CODE' /usr/local/cuda/include/nccl.h 2>/dev/null
  return 0  # a missing header or tool is a line less in the record, not a failed stage
}
run_stage "1 environment" 30 bash -c "$(declare -f environment); ROOT='$ROOT' environment > '$ENVF'"

# --- 2 build ----------------------------------------------------------------------------------
BIN="${CLUSTERSIM_BIN:-}"
GPU_TESTS="${CLUSTERSIM_GPU_TESTS:-}"
CTEST_DIR=""
build() {
  if [ -n "$BIN" ]; then
    echo "using the given binary $BIN"
  elif [ -x "$ROOT/build-gpu/dist/bin/clustersim" ] && ! ldd "$ROOT/build-gpu/dist/bin/clustersim" "$ROOT/build-gpu/dist/bin/libclustersim_cuda.so" | grep -q "not found"; then
    echo "using the carried bundle build-gpu/dist"
    ldd "$ROOT/build-gpu/dist/bin/clustersim" "$ROOT/build-gpu/dist/bin/libclustersim_cuda.so"
  elif command -v cmake >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    cmake -S "$ROOT" -B "$ROOT/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build "$ROOT/build-gpu" -j "$(nproc)" --target clustersim clustersim_cuda clustersim_gpu_tests
  else
    echo "no usable build: build-gpu/dist is missing or lacks libraries here, and cmake or nvcc is missing to build one"
    [ -x "$ROOT/build-gpu/dist/bin/clustersim" ] && ldd "$ROOT/build-gpu/dist/bin/clustersim" | grep "not found"
    return 1
  fi
}
# The bundle's libraries (and their own dependencies) come from build-gpu/dist/lib.
[ -d "$ROOT/build-gpu/dist/lib" ] && export LD_LIBRARY_PATH="$ROOT/build-gpu/dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# A GPU machine may hold cuBLAS, cudart or NCCL only inside a Python environment (pip's nvidia-*
# wheels, as PyTorch ships them) rather than under /usr/local/cuda: find each library the bundle
# misses and add its folder.
if [ "$DRY" != 1 ] && [ -x "$ROOT/build-gpu/dist/bin/clustersim" ]; then
  for lib in $(ldd "$ROOT/build-gpu/dist/bin/clustersim" "$ROOT/build-gpu/dist/bin/libclustersim_cuda.so" 2>/dev/null | awk '/not found/{print $1}' | sort -u); do
    hit="$(timeout 60 find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -1)"
    if [ -n "$hit" ]; then
      export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$hit")"
      say "library $lib: not under the usual paths; using $hit"
    else
      say "library $lib: not found anywhere on this machine"
    fi
  done
fi
if [ "$DRY" = 1 ] && [ -z "$BIN" ]; then
  for b in "$ROOT/build-gpu/cli/clustersim" "$ROOT/build/cli/clustersim"; do [ -x "$b" ] && { BIN="$b"; break; }; done
fi
run_stage "2 build" 480 bash -c "$(declare -f build); ROOT='$ROOT' BIN='$BIN' build"
if [ -z "$BIN" ]; then
  if [ -x "$ROOT/build-gpu/dist/bin/clustersim" ] && ! ldd "$ROOT/build-gpu/dist/bin/clustersim" "$ROOT/build-gpu/dist/bin/libclustersim_cuda.so" | grep -q "not found"; then
    BIN="$ROOT/build-gpu/dist/bin/clustersim"; GPU_TESTS="${GPU_TESTS:-$ROOT/build-gpu/dist/bin/clustersim_gpu_tests}"
  else
    BIN="$ROOT/build-gpu/cli/clustersim"; CTEST_DIR="$ROOT/build-gpu"
  fi
fi
[ -z "$GPU_TESTS" ] && [ -x "$(dirname "$BIN")/../tests/clustersim_gpu_tests" ] && GPU_TESTS="$(dirname "$BIN")/../tests/clustersim_gpu_tests"
if [ ! -x "$BIN" ]; then
  say "gpu-validate: no clustersim binary ($BIN); stopping"
  exit 1
fi
say "binary: $BIN"
if [ "$DRY" != 1 ] && ! nvidia-smi -L >> "$LOG" 2>&1; then
  say "gpu-validate: no NVIDIA GPU visible here (nvidia-smi -L failed); the flow without a GPU: --dry-run"
  exit 1
fi
ldd "$BIN" >> "$LOG" 2>&1
# The GPU's clocks, power and temperature once a second while the campaign runs: a calibration
# that heats the GPU into lower clocks than the runs it prices shows here.
DMON_PID=""
if [ "$DRY" != 1 ] && command -v nvidia-smi >/dev/null; then
  nvidia-smi dmon -s pc -d 1 -o T > "$OUT/gpu-clocks.txt" 2>&1 &
  DMON_PID=$!
fi

# --- 3 gpu tests ------------------------------------------------------------------------------
export CLUSTERSIM_SOURCE_DIR="$ROOT"
gpu_tests() {
  if [ "$DRY" != 1 ] && [ -n "$CTEST_DIR" ] && [ -f "$CTEST_DIR/CTestTestfile.cmake" ]; then
    ctest --test-dir "$CTEST_DIR" -L gpu --output-on-failure
  elif [ -n "$GPU_TESTS" ] && [ -x "$GPU_TESTS" ]; then
    # One process per test, as ctest runs them: an injected kernel fault ruins its process's
    # CUDA context for any test after it.
    echo "(the ctest -L gpu tests, run from their binary $GPU_TESTS, one process each)"
    local rc=0 suite="" t
    for t in $("$GPU_TESTS" --gtest_list_tests | grep -E '^[A-Za-z_0-9]+\.$|^  [A-Za-z_0-9]+' | sed 's/ *#.*//'); do
      case "$t" in *.) suite="$t"; continue ;; esac
      "$GPU_TESTS" --gtest_filter="$suite$t" || rc=1
    done
    return $rc
  else
    echo "no gpu test binary next to $BIN"; return 1
  fi
}
wants 3 && run_stage "3 gpu tests" 150 bash -c "$(declare -f gpu_tests); DRY='$DRY' CTEST_DIR='$CTEST_DIR' GPU_TESTS='$GPU_TESTS' BIN='$BIN' gpu_tests > '$OUT/gpu-tests.txt' 2>&1"

# --- 4 calibrate ------------------------------------------------------------------------------
mkdir -p "$OUT/profiles"
if [ "$DRY" = 1 ]; then GPU=cpu; else
  NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  case "$NAME" in
    *H200*) GPU=h200 ;; *H100*PCIe*) GPU=h100_pcie ;; *H100*) GPU=h100_sxm ;; *A100*) GPU=a100_sxm_80gb ;; *) GPU=gpu ;;
  esac
fi
PROFILE="$OUT/profiles/$GPU.yaml"
wants 4 && run_stage "4 calibrate ($GPU)" 420 bash -c "'$BIN' calibrate --backend $BACKEND --out '$PROFILE' --raw '$OUT/profiles/$GPU.raw.csv' > '$OUT/profiles/calibrate.txt' 2>&1; rc=\$?; cat '$OUT/profiles/calibrate.txt'; exit \$rc"
if [ "$DRY" != 1 ] && wants 4; then
  # The versions the backend itself reported (GPU, driver API, CUDA runtime, cuBLASLt, NCCL).
  grep -m1 '^calibrate   cuda backend on' "$OUT/profiles/calibrate.txt" | sed 's/^calibrate   cuda backend on /cuda backend: /' >> "$ENVF" 2>/dev/null
fi
PROFILE_ARG=()
if ! wants 4 && [ -n "${CLUSTERSIM_PROFILE:-}" ]; then
  [ -s "$CLUSTERSIM_PROFILE" ] || { say "gpu-validate: CLUSTERSIM_PROFILE=$CLUSTERSIM_PROFILE is not a readable profile"; exit 2; }
  PROFILE="$CLUSTERSIM_PROFILE"
  say "profile: $PROFILE (calibrate not run in this call)"
fi
[ -s "$PROFILE" ] && PROFILE_ARG=(--profile "$PROFILE")

# --- 5 + 6 execute and validate ---------------------------------------------------------------
MEAS="$OUT/validate/measurements"
mkdir -p "$MEAS/scenarios"
if [ "$DRY" = 1 ]; then
  RUNS=("small:$ROOT/scenarios/cpu-mlp-2rank-ddp.yaml" "large:$ROOT/scenarios/cpu-gpt-tiny-2rank-ddp.yaml")
  BASE_MODEL="  family: gpt\n  layers: 2\n  hidden: 256\n  heads: 4\n  vocab: 2048\n  max_seq: 128"
  SWEEP_WHAT="Dry run of seed 002's batch sweep on the small cpu GPT"
  SEQ=128; SWEEP_PRECISIONS="${CLUSTERSIM_SWEEP_PRECISIONS:-fp32}"; CLUSTER=single_h100; WARM=1; STEPS=2; EXEC_BUDGET=60; SWEEP_BUDGET=40
else
  RUNS=("small:$ROOT/scenarios/gpt2-small-1xh100.yaml" "large:$ROOT/scenarios/gpt2-large-1xh100.yaml")
  BASE_MODEL="  preset: gpt2-large"
  SWEEP_WHAT="Seed 002, Table 2: single-GPU batch sweep, GPT-2 Large (PyTorch autocast)"
  SEQ=1024; SWEEP_PRECISIONS="${CLUSTERSIM_SWEEP_PRECISIONS:-amp_fp16 tf32}"; CLUSTER=single_h100; WARM=2; STEPS=5; EXEC_BUDGET=150; SWEEP_BUDGET=120
fi
# Seed 002 says "mixed precision (FP16 for forward/backward)", yet its throughput implies fp32
# GEMMs on TF32 tensor cores (issue 13): the sweep runs at both readings.
for PRECISION in $SWEEP_PRECISIONS; do
  for b in $SWEEP; do
    f="$MEAS/scenarios/sweep-$PRECISION-b$b.yaml"
    printf "# %s, micro-batch = global batch = %s, sequence %s,\n# %s, AdamW; generated by scripts/gpu-validate.sh.\nname: sweep-%s-b%s\nmodel:\n%b\ncluster:\n  preset: %s\nlayout:\n  dp: 1\ntraining:\n  global_batch: %s\n  micro_batch: %s\n  seq_len: %s\n  precision: %s\n  attention: fused\n  optimizer: adamw\n" \
      "$SWEEP_WHAT" "$b" "$SEQ" "$PRECISION" "$PRECISION" "$b" "$BASE_MODEL" "$CLUSTER" "$b" "$b" "$SEQ" "$PRECISION" > "$f"
    RUNS+=("sweep-$PRECISION-b$b:$f")
  done
done

printf "run\tscenario\tmeasured_ms\tpredicted_ms\terror_pct\tgemm_median_error_pct\tpeak_error_pct\tmeasured_tokens_per_s\tmeasured_peak_bytes\n" > "$OUT/summary.tsv"
wants 5 || RUNS=()
for entry in "${RUNS[@]}"; do
  tag="${entry%%:*}"; scen="${entry#*:}"
  name="$(basename "$scen" .yaml)"
  d="$MEAS/$name"; mkdir -p "$d"
  budget=$EXEC_BUDGET; case "$tag" in sweep-*) budget=$SWEEP_BUDGET ;; esac
  run_stage "5 execute $name" "$budget" bash -c "'$BIN' execute '$scen' --backend $BACKEND --launcher none --warmup $WARM --steps $STEPS --timeline '$d/timeline.json' --json '$d/report.json' > '$d/execute.txt' 2>&1; rc=\$?; tail -n 30 '$d/execute.txt'; exit \$rc" || continue
  run_stage "6 validate $name" 60 bash -c "'$BIN' validate --measured '$d/timeline.json' '$scen' ${PROFILE_ARG[*]:-} --trace '$d/side_by_side.json' > '$d/validate.txt' 2>&1; rc=\$?; head -n 20 '$d/validate.txt'; exit \$rc" || continue
  line="$(grep -m1 '^step time   predicted' "$d/validate.txt")"
  pred="$(echo "$line" | sed -n 's/.*predicted \([0-9.]*\) ms.*/\1/p')"
  meas="$(echo "$line" | sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p')"
  err="$(echo "$line" | sed -n 's/.*error \([-+0-9.]*\)%.*/\1/p')"
  gemm_err="$(sed -n 's/^GEMM tasks  median error \([0-9.]*\)%.*/\1/p' "$d/validate.txt" | head -1)"
  peak_err="$(sed -n 's/^peak memory predicted.*error \([-+0-9.]*\)%.*/\1/p' "$d/validate.txt" | head -1)"
  tps="$(grep -m1 '^throughput' "$d/execute.txt" | awk '{print $2}')"
  peak="$(python3 -c "import json,sys; print(max(json.load(open(sys.argv[1]))['peak_memory_bytes']))" "$d/timeline.json" 2>/dev/null || echo "")"
  printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$tag" "$name" "$meas" "$pred" "$err" "$gemm_err" "$peak_err" "$tps" "$peak" >> "$OUT/summary.tsv"
done

# --- summary ----------------------------------------------------------------------------------
[ -n "$DMON_PID" ] && kill "$DMON_PID" 2>/dev/null
say ""
say "summary ($OUT/summary.tsv):"
column -t -s $'\t' "$OUT/summary.tsv" 2>/dev/null | tee -a "$LOG" || cat "$OUT/summary.tsv" | tee -a "$LOG"
[ "$DRY" = 1 ] || say "seed 002 Table 2 (tokens/s, 1x H100, PyTorch): b1 16521, b4 30819, b8 32585, b16 33900, b32 34560"
say ""
say "wrote:"
(cd "$OUT" && find . -type f | sort | sed 's/^\.\//  /') | tee -a "$LOG"
if [ "${#FAILED[@]}" -gt 0 ]; then
  say "campaign finished in $(elapsed)s with ${#FAILED[@]} stage(s) not done: ${FAILED[*]}"
  exit 1
fi
say "campaign complete in $(elapsed)s: $DONE stages done ($MODE)"
[ "$DRY" = 1 ] || say "to commit: cp -r $OUT/profiles/. profiles/ && mkdir -p validate/measurements && cp -r $OUT/validate/measurements/. validate/measurements/ && cp $OUT/environment.txt validate/measurements/"
exit 0
