#!/usr/bin/env bash
# Issue 37's GPU campaign 2, in one command and under 9 minutes on one H100 or H200:
#   scripts/gpu-database.sh OUTDIR
# A measured kernel and step database wide enough to fit profiles on, split into calibration and
# validation architectures before anything was measured (validate/measurements/
# SPLIT_gpu_database.yaml). Stages, each with its own time budget (a stage past its budget is
# stopped and the campaign goes on; the total never passes CLUSTERSIM_BUDGET_S, default 530 s).
# The expected times are each stage's shapes x repetitions on an H100 (`--estimate` prints them
# from the scripts' own lists), not measurements:
#   1 environment  10 s  nvidia-smi (GPU, driver, clocks, power); torch, transformers, CUDA, cuDNN
#   2 binary        2 s  clustersim: the carried bundle build-gpu/dist (scripts/gpu-validate.sh
#                        --bundle), else CLUSTERSIM_BIN, else build-gpu/ or build/; `ldd` finds all
#   3 plan          3 s  the split checked against its rule, the 14 trained configs written
#                        (steps/configs/) and read back by `clustersim import hf`
#   4 kernels      75 s  scripts/torch-kernel-database.py: 2,514 GEMMs (hidden 512-16,384, ffn
#                        8/3 and 4, TP 1-8, 2k and 8k tokens, vocabulary heads; forward, input and
#                        weight gradient; bf16, and fp16 / tf32 / fp8 tensorwise and rowwise on
#                        the 8k-token TP 1 and 8 shapes) x ~4 ms of timed calls each; 64 grouped-expert GEMMs (16-1,024
#                        tokens per expert, torch._grouped_mm and the per-expert loop); 114
#                        memory-bound kernels (norms, rotary, SwiGLU, GELU, softmax, cross-entropy
#                        by bytes, forward and backward; AdamW foreach and fused)
#   5 attention    67 s  scripts/torch-attention-sweep.py --database: 90 shapes x 2 back ends
#                        (cuDNN, flash; head_dim 64/128/256, GQA 1-16, sequence 512-32k, causal
#                        and not, a 4,096 sliding window) x forward and forward + backward, ~40 ms
#                        of timed calls each
#   6 eager steps 140 s  scripts/torch-hf-steps.py: 14 configs of 12 Hugging Face classes x 4-6
#                        (batch, sequence) points (batch 1-16, sequence 1k-8k), 8 steps each,
#                        peak memory, host time per op; ~128 s of steps + the imports
#   7 same graph   40 s  `execute --backend cuda`, `simulate` and `validate --measured` of three
#                        executor shapes no profile was fitted on (summary.tsv)
#   8 compiled    160 s  the steps at (4, 2048) under torch.compile: ~25 s of compile per
#                        config (assumed: 2-layer models, 16 cores, a cold cache), so about 5 of
#                        the 14 fit one call, calibration and validation alternately; a later call
#                        runs the rest (CLUSTERSIM_DB_STAGES=8 CLUSTERSIM_DB_ONLY=names) or batch
#                        1 (CLUSTERSIM_DB_GRID=1x1024). Last: it gets the time left.
# Sum of the expected times: about 490 s of the 530 s budget (the device call: 600 s at most);
# the compiled steps take what is left, up to 160 s.
#
# Output, laid out to be copied as it is into validate/measurements/<gpu>_<YYYYMMDD>/ (the script
# names the folder at the end; a device call packs OUTDIR into one archive: the docs say how):
#   environment.txt, database.log, gpu-clocks.txt, summary.tsv (same graph)
#   kernels/{gemm,grouped_gemm,memory_bound,attention}.csv
#   steps/{plan.csv, configs/<name>.json (+ .import.txt), steps_<stack>.csv, host_ops_<stack>.csv,
#          status_<stack>.csv, worker_<stack>.log}
#   same_graph/scenarios/*.yaml, same_graph/<name>/{timeline.json, report.json, execute.txt,
#          simulate.json, validate.txt}
#
# Options:
#   --dry-run   every stage with tiny sizes, no GPU needed (CI runs it: tests/cmake/
#               gpu_database.cmake): the PyTorch stages check their inputs (the split, configs,
#               shape lists) and write their files' layout, and say "SKIPPED (no torch)" where
#               torch (or a GPU) is missing; the same-graph stage runs on the cpu backend.
#               Also CLUSTERSIM_DRY_RUN=1.
#   --estimate  the stages' expected seconds from the scripts' shape lists; nothing runs.
# Environment: CLUSTERSIM_BIN (the binary), CLUSTERSIM_BUDGET_S (total, default 530),
# CLUSTERSIM_DB_STAGES (which of stages 4-8 to run, default "4 5 6 7 8"), CLUSTERSIM_DB_ONLY
# (comma-separated architecture names for stages 6 and 8: the rest of an earlier call),
# CLUSTERSIM_DB_GRID ("BxS,BxS": the (batch, sequence) points of stages 6 and 8 instead of theirs).
# How a device session runs it: docs/user-guide/gpu-campaign.md ("Campaign 2").
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DRY="${CLUSTERSIM_DRY_RUN:-0}"
OUT=""
for a in "$@"; do
  case "$a" in
    --dry-run) DRY=1 ;;
    --estimate)
      cd "$ROOT" && python3 scripts/torch-kernel-database.py --estimate &&
        python3 scripts/torch-attention-sweep.py --estimate --database &&
        python3 scripts/torch-hf-steps.py --estimate --stack pytorch_eager --budget-s 135 &&
        python3 scripts/torch-hf-steps.py --estimate --stack torch_compile --budget-s 150
      exit $? ;;
    -h|--help) awk 'NR > 1 && /^set -uo/ {exit} NR > 1' "$0"; exit 0 ;;
    -*) echo "gpu-database: unknown option '$a' (valid: --dry-run, --estimate, --help)" >&2; exit 2 ;;
    *) [ -z "$OUT" ] || { echo "gpu-database: one OUTDIR, got a second: '$a'" >&2; exit 2; }; OUT="$a" ;;
  esac
done
[ -n "$OUT" ] || { echo "usage: scripts/gpu-database.sh [--dry-run | --estimate] OUTDIR" >&2; exit 2; }
mkdir -p "$OUT" || { echo "gpu-database: cannot create $OUT" >&2; exit 2; }
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/database.log"
: > "$LOG"
TOTAL_BUDGET="${CLUSTERSIM_BUDGET_S:-530}"
STAGES="${CLUSTERSIM_DB_STAGES:-4 5 6 7 8}"
ONLY="${CLUSTERSIM_DB_ONLY:-}"
GRID="${CLUSTERSIM_DB_GRID:-}"
STAGE_MARGIN_S=5
source "$ROOT/scripts/lib/stages.sh"
# The Python stages are told their budget less a margin, so that they end on their own, files
# closed, before `timeout` would stop them.
py_budget() { echo $(( STAGE_BUDGET > 20 ? STAGE_BUDGET - 10 : STAGE_BUDGET / 2 )); }
export -f py_budget

if [ "$DRY" = 1 ]; then MODE="dry run (tiny sizes; cpu backend; no GPU needed)"; DRYARG=--dry-run; BACKEND=cpu
else MODE="GPU database (cuda backend)"; DRYARG=""; BACKEND=cuda; fi
say "gpu-database: $MODE -> $OUT; total budget ${TOTAL_BUDGET}s"

# --- 1 environment ---------------------------------------------------------------------------
environment() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "host: $(uname -srm), $(nproc) cores"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu,persistence_mode --format=csv
  else
    echo "nvidia-smi: not found (no NVIDIA driver)"
  fi
  python3 -c "import sys, torch; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version()); print('gpu', torch.cuda.get_device_name() if torch.cuda.is_available() else 'none')" 2>&1 | tail -3
  python3 -c "import transformers; print('transformers', transformers.__version__)" 2>&1 | tail -1
  return 0  # a missing tool is a line less in the record, not a failed stage
}
run_stage "1 environment" 30 bash -c "$(declare -f environment); ROOT='$ROOT' environment > '$OUT/environment.txt'"

# --- 2 binary --------------------------------------------------------------------------------
BIN="${CLUSTERSIM_BIN:-}"
DIST="$ROOT/build-gpu/dist"
[ -d "$DIST/lib" ] && export LD_LIBRARY_PATH="$DIST/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "$BIN" ]; then
  for b in "$DIST/bin/clustersim" "$ROOT/build-gpu/cli/clustersim" "$ROOT/build/cli/clustersim"; do
    [ -x "$b" ] && { BIN="$b"; break; }
  done
fi
# As scripts/gpu-validate.sh: a library the bundle misses may sit in a Python environment
# (PyTorch's nvidia-* wheels) rather than under /usr/local/cuda; add its folder.
if [ "$DRY" != 1 ] && [ -n "$BIN" ]; then
  for lib in $(ldd "$BIN" "$(dirname "$BIN")/libclustersim_cuda.so" 2>/dev/null | awk '/not found/{print $1}' | sort -u); do
    hit="$(timeout 30 find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -1)"
    [ -n "$hit" ] || continue
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$hit")"
    export LD_LIBRARY_PATH
    say "library $lib: using $hit"
  done
fi
run_stage "2 binary" 10 bash -c "[ -x '$BIN' ] || { echo 'no clustersim binary: carry build-gpu/dist (scripts/gpu-validate.sh --bundle) or set CLUSTERSIM_BIN'; exit 1; }; echo '$BIN'; '$BIN' --version; ! ldd '$BIN' | grep 'not found'"
if [ "$DRY" != 1 ]; then
  if ! nvidia-smi -L >> "$LOG" 2>&1; then
    say "gpu-database: no NVIDIA GPU visible here (nvidia-smi -L failed); without a GPU: --dry-run"
    exit 1
  fi
  NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  # As scripts/gpu-validate.sh names them (profiles/<gpu>.yaml where one is committed).
  case "$NAME" in
    *H200*) GPU=h200 ;; *H100*PCIe*) GPU=h100_pcie ;; *H100*) GPU=h100_sxm ;; *A100*) GPU=a100_sxm_80gb ;; *) GPU=gpu ;;
  esac
  nvidia-smi dmon -s pc -d 1 -o T > "$OUT/gpu-clocks.txt" 2>&1 &
  DMON_PID=$!
else
  GPU=cpu; DMON_PID=""
fi

# --- 3 plan: the split, the trained configs, and clustersim reading each --------------------
plan() {
  cd "$ROOT" && python3 scripts/torch-hf-steps.py --check-split &&
    python3 scripts/torch-hf-steps.py "$OUT" --plan-only ${ONLY:+--only "$ONLY"} || return 1
  local f rc=0
  for f in "$OUT"/steps/configs/*.json; do
    "$BIN" import hf "$f" > "${f%.json}.import.txt" 2>&1 || { echo "clustersim import hf $f failed:"; cat "${f%.json}.import.txt"; rc=1; }
    head -2 "${f%.json}.import.txt" | tail -1 | sed "s|^|$(basename "$f" .json): |"
  done
  return $rc
}
run_stage "3 plan" 20 bash -c "$(declare -f plan); ROOT='$ROOT' OUT='$OUT' BIN='$BIN' ONLY='$ONLY' plan"

# --- 4-6 PyTorch ----------------------------------------------------------------------------
cd "$ROOT" || exit 2
# Models are built from their configs: nothing is downloaded, and the device has no network.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
mkdir -p "$OUT/kernels"
wants 4 && run_stage "4 kernels" 90 bash -c "python3 scripts/torch-kernel-database.py '$OUT' $DRYARG --budget-s \$(py_budget)"
attention() {
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    python3 scripts/torch-attention-sweep.py --database $DRYARG --budget-s "$(py_budget)" "$OUT/kernels/attention.csv"
  else
    # No torch or no GPU: the shape list stands for the file, so the layout is still checked.
    python3 scripts/torch-attention-sweep.py --list --database $DRYARG > "$OUT/kernels/attention_shapes.csv" &&
      echo "attention: $(wc -l < "$OUT/kernels/attention_shapes.csv") shapes planned, SKIPPED (no torch or no GPU)"
  fi
}
wants 5 && run_stage "5 attention" 75 bash -c "$(declare -f attention); OUT='$OUT' DRYARG='$DRYARG' attention"
steps() {  # steps STACK: scripts/torch-hf-steps.py for one stack, told its budget
  python3 scripts/torch-hf-steps.py "$OUT" --stack "$1" $DRYARG ${ONLY:+--only "$ONLY"} ${GRID:+--grid "$GRID"} --budget-s "$(py_budget)"
}
wants 6 && run_stage "6 steps pytorch_eager" 145 bash -c "$(declare -f steps); OUT='$OUT' DRYARG='$DRYARG' ONLY='$ONLY' GRID='$GRID' steps pytorch_eager"

# --- 7 same graph: the executor against the simulator on three shapes no profile was fitted on --
SG="$OUT/same_graph"
mkdir -p "$SG/scenarios"
# name|model block|micro-batch|sequence: a GPT with 128-wide heads, a GQA Llama with a 128k
# vocabulary, and a wide MHA Llama (GPT-2 small/Large and the sweep's shapes fitted the profiles).
# Sized for seconds a run: the executor's attention is unfused (about 2% of peak), so its
# sequences stay at 1-2k: the GQA Llama's attention is ~3 TFLOP a step (4 x 4 x 24 x 2048^2 x 128
# per layer forward, x 4 layers, x 3.5 with backward), ~0.15 s at 20 TFLOP/s.
if [ "$DRY" = 1 ]; then
  SHAPES=("gpt-8x256|  family: gpt\n  layers: 2\n  hidden: 256\n  heads: 2\n  vocab: 2048\n  max_seq: 128|2|128"
          "llama-gqa-tiny|  family: llama\n  layers: 2\n  hidden: 256\n  heads: 8\n  kv_heads: 2\n  ffn_hidden: 688\n  vocab: 4096\n  max_seq: 128|2|128"
          "llama-mha-tiny|  family: llama\n  layers: 1\n  hidden: 320\n  heads: 5\n  ffn_hidden: 864\n  vocab: 2048\n  max_seq: 64|4|64")
  PRECISION=fp32; WARM=1; STEPS=2
else
  SHAPES=("gpt-8x1536|  family: gpt\n  layers: 8\n  hidden: 1536\n  heads: 12\n  vocab: 50304\n  max_seq: 2048|4|2048"
          "llama-gqa-3072|  family: llama\n  layers: 4\n  hidden: 3072\n  heads: 24\n  kv_heads: 8\n  ffn_hidden: 8192\n  vocab: 128256\n  max_seq: 2048|4|2048"
          "llama-mha-5120|  family: llama\n  layers: 2\n  hidden: 5120\n  heads: 40\n  ffn_hidden: 13824\n  vocab: 32000\n  max_seq: 1024|8|1024")
  PRECISION=amp_bf16; WARM=2; STEPS=5
fi
PROFILE_ARG=""
[ -s "$ROOT/profiles/$GPU.yaml" ] && PROFILE_ARG="--profile $ROOT/profiles/$GPU.yaml"
printf "run\tmeasured_ms\tsimulated_ms\tvalidate_predicted_ms\terror_pct\tgemm_median_error_pct\tpeak_error_pct\n" > "$OUT/summary.tsv"
for entry in "${SHAPES[@]}"; do
  IFS='|' read -r name model mb seq <<< "$entry"
  scen="$SG/scenarios/$name.yaml"
  printf "# Issue 37's same-graph check: a shape no profile was fitted on; generated by scripts/gpu-database.sh.\nname: %s\nmodel:\n%b\ncluster:\n  preset: single_h100\nlayout:\n  dp: 1\ntraining:\n  global_batch: %s\n  micro_batch: %s\n  seq_len: %s\n  precision: %s\n  attention: fused\n  optimizer: adamw\n" \
    "$name" "$model" "$mb" "$mb" "$seq" "$PRECISION" > "$scen"
  wants 7 || continue
  d="$SG/$name"; mkdir -p "$d"
  run_stage "7 execute $name" 20 bash -c "'$BIN' execute '$scen' --backend $BACKEND --launcher none --warmup $WARM --steps $STEPS --timeline '$d/timeline.json' --json '$d/report.json' > '$d/execute.txt' 2>&1; rc=\$?; tail -n 12 '$d/execute.txt'; exit \$rc" || continue
  run_stage "7 simulate $name" 10 bash -c "'$BIN' simulate '$scen' $PROFILE_ARG --json '$d/simulate.json' > /dev/null && '$BIN' validate --measured '$d/timeline.json' '$scen' $PROFILE_ARG > '$d/validate.txt' 2>&1; rc=\$?; head -n 8 '$d/validate.txt'; exit \$rc" || continue
  line="$(grep -m1 '^step time   predicted' "$d/validate.txt")"
  pred="$(echo "$line" | sed -n 's/.*predicted \([0-9.]*\) ms.*/\1/p')"
  meas="$(echo "$line" | sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p')"
  err="$(echo "$line" | sed -n 's/.*error \([-+0-9.]*\)%.*/\1/p')"
  gemm_err="$(sed -n 's/^GEMM tasks  median error \([0-9.]*\)%.*/\1/p' "$d/validate.txt" | head -1)"
  peak_err="$(sed -n 's/^peak memory predicted.*error \([-+0-9.]*\)%.*/\1/p' "$d/validate.txt" | head -1)"
  sim="$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['step_time_s'] * 1e3, 3))" "$d/simulate.json" 2>/dev/null || echo "")"
  printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$name" "$meas" "$sim" "$pred" "$err" "$gemm_err" "$peak_err" >> "$OUT/summary.tsv"
done

# --- 8 compiled steps: last, since compiling is what the time left is spent on ----------------
wants 8 && run_stage "8 steps torch_compile" 160 bash -c "$(declare -f steps); OUT='$OUT' DRYARG='$DRYARG' ONLY='$ONLY' GRID='$GRID' steps torch_compile"

# --- summary ----------------------------------------------------------------------------------
[ -n "$DMON_PID" ] && kill "$DMON_PID" 2>/dev/null
say ""
say "same graph ($OUT/summary.tsv):"
column -t -s $'\t' "$OUT/summary.tsv" 2>/dev/null | tee -a "$LOG"
for f in "$OUT"/steps/status_*.csv; do
  [ -f "$f" ] && say "$(basename "$f"): $(tail -n +2 "$f" | cut -d, -f4 | sed 's/:.*//' | sort | uniq -c | tr '\n' ' ')"
done
say ""
say "wrote:"
(cd "$OUT" && find . -type f | sort | sed 's/^\.\//  /') | tee -a "$LOG"
if [ "${#FAILED[@]}" -gt 0 ]; then
  say "gpu-database finished in $(elapsed)s with ${#FAILED[@]} stage(s) not done: ${FAILED[*]}"
  [ "$DRY" = 1 ] || say "to commit: validate/measurements/${GPU}_$(date -u +%Y%m%d)/ holds $OUT as it is (docs/user-guide/gpu-campaign.md, campaign 2)"
  exit 1
fi
say "gpu-database complete in $(elapsed)s: $DONE stages done ($MODE)"
[ "$DRY" = 1 ] || say "to commit: validate/measurements/${GPU}_$(date -u +%Y%m%d)/ holds $OUT as it is (docs/user-guide/gpu-campaign.md, campaign 2)"
exit 0
