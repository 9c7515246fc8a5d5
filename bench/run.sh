#!/usr/bin/env bash
# Issue 18's and 36's figures, each next to its target, as a markdown table (figure | measured |
# target | met?), written to bench/results.md with the date and the machine; a full run also
# rewrites the generated blocks of docs/user-guide/benchmarks.md (the whole table) and README.md
# (the rows with a target of their own), as --write-docs does from an existing results file.
#
# usage: bash bench/run.sh [--quick] [--dry] [--build DIR] [--out FILE] | --write-docs [FILE]
#   --quick      skip the slow rows (16,384 GPUs and up, Llama 3 405B, flow level, plan, trace):
#                a smoke run of a minute or so; prints the table, writes no file unless --out
#   --dry        run nothing: print the rows that would be measured, with their commands and
#                targets (what the ctest bench.run_sh_dry checks); writes no file
#   --build DIR  the build folder holding cli/clustersim and bench/clustersim_engine_bench
#                (default: build, as scripts/build.sh makes it)
#   --out FILE   where the table goes (default: bench/results.md for a full run, none otherwise)
#   --write-docs [FILE]  run nothing: rewrite the docs' generated blocks from FILE (default
#                bench/results.md)
# Every timed figure is also read as a multiple of a yardstick timed just before it in the same
# run (bench/reference_loop.cpp: a plain binary-heap event loop, "ref"), and its target is met
# when that multiple is: a time target T seconds is T / ref_nominal refs, ref_nominal being the
# loop's time alone on a fixed machine (below). A busy or slower machine slows the loop as much
# as the row, so it neither hides a regression nor fakes a gain; seconds are shown beside.
# Memory targets stay in bytes.
# Whole-process figures from /usr/bin/time -v: wall seconds (median of 3 runs when a run takes
# under 5 s, else one run: a growth verdict compares two runs, and one slow run on a shared VM
# flipped it; the start-up rows: see measure_short) and peak RSS (the largest of those runs).
# 1 GB = 10^9 bytes.
# Growth rows compare with the row before: met when refs grew no faster than the GPU count.
# Every run is under `timeout` (per run: $BENCH_TIMEOUT seconds, default 900).
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0 dry=0 build=build out="" write_docs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --dry) dry=1 ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --write-docs)
      write_docs=bench/results.md
      if [ $# -gt 1 ] && [[ $2 != -* ]]; then write_docs=$2; shift; fi ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown option '$1' (--quick, --dry, --build DIR, --out FILE, --write-docs [FILE])" >&2; exit 2 ;;
  esac
  shift
done
# --- the docs' generated blocks, from a results file -----------------------------------------
# benchmarks.md: the file as it is but its title; README.md: its date line and the rows whose
# target is their own (not "growth", not "(reference)").
docs_from() {
  local results=$1 readme_rows
  [ -f "$results" ] || { echo "bench/run.sh: no $results to write the docs from" >&2; exit 2; }
  source scripts/lib/generated-block.sh
  readme_rows=$(mktemp)
  {
    grep -m1 '^Taken ' "$results" | sed 's/ (checkout at the start.*//; s/$/; every row and how to read it: [benchmarks](docs\/user-guide\/benchmarks.md)./'
    echo
    grep -E '^\| figure |^\|---' "$results"
    grep -E '^\| ' "$results" | awk -F' \\| ' '$3 !~ /^(growth|\(reference\))/ && $1 != "| figure"'
  } > "$readme_rows"
  sed '/^# /,/^$/d' "$results" > "$readme_rows.full"   # its own title off: the page has one
  replace_generated_block docs/user-guide/benchmarks.md "$readme_rows.full" bench/run.sh
  replace_generated_block README.md "$readme_rows" bench/run.sh
  rm -f "$readme_rows" "$readme_rows.full"
}
if [ -n "$write_docs" ]; then docs_from "$write_docs"; exit 0; fi

[ -z "$out" ] && [ $quick = 0 ] && [ $dry = 0 ] && out=bench/results.md
bin=$build/cli/clustersim
ebench=$build/bench/clustersim_engine_bench
refbin=$build/bench/clustersim_reference_loop
# The yardstick's seconds on the machine the targets are read for: the 2-core AMD EPYC machine
# of issue 36 (2026-11-27), where its CPU time, the median of its 3 passes, was 0.125 s in every
# run under any load (its wall time alone; under a load of 18, its wall time was 1.4-1.6 s).
ref_nominal=0.125
limit=${BENCH_TIMEOUT:-900}
if [ $dry = 0 ]; then
  [ -x "$bin" ] || { echo "bench/run.sh: no $bin (build first: bash scripts/build.sh, or pass --build DIR)" >&2; exit 2; }
  [ -x "$refbin" ] || { echo "bench/run.sh: no $refbin (built with the bench: cmake --build $build --target clustersim_reference_loop)" >&2; exit 2; }
fi

head=$(git rev-parse --short HEAD 2>/dev/null || echo '?')  # the checkout when the run began
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=()   # markdown rows
row() { rows+=("| $1 | $2 | $3 | $4 |"); printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" >&2; }

# --- the yardstick ---------------------------------------------------------------------------
# reference: sets REF and REF_CPU, the loop's wall and CPU seconds now.
reference() {
  read -r REF REF_CPU _ < <("$refbin")
  [ -n "${REF:-}" ] || { echo "bench/run.sh: $refbin printed nothing" >&2; exit 2; }
}
refs() { awk -v w="$1" -v r="$REF" 'BEGIN{printf "%.3g", w/r}'; }   # W in refs now
# within W T: W seconds, read in refs, is at most target T seconds in refs (T / ref_nominal).
within() { awk -v w="$1" -v r="$REF" -v t="$2" -v n="$ref_nominal" 'BEGIN{exit !(w/r <= t/n)}'; }
# tgt T: "≤ T s (N ref)"
tgt() { awk -v t="$1" -v n="$ref_nominal" 'BEGIN{printf "≤ %s s (%.4g ref)", t, t/n}'; }
# timed W: "W s = R ref" (the figure as measured, then as a multiple of the yardstick)
timed() { echo "$1 s = $(refs "$1") ref"; }

# --- one measured process ---------------------------------------------------------------------
# measure CMD...: sets W (wall s), KB (peak RSS KiB), RC (exit status), OUTF (its stdout+stderr).
measure_once() {
  OUTF=$tmp/out.txt
  timeout "$limit" /usr/bin/time -v -o "$tmp/time.txt" "$@" > "$OUTF" 2>&1
  RC=$?
  W=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$tmp/time.txt" 2>/dev/null)
  KB=$(awk -F': ' '/Maximum resident set size/{print $2}' "$tmp/time.txt" 2>/dev/null)
  [ -n "$W" ] || W=$limit
  W=$(awk -v w="$W" 'BEGIN{printf "%.2f", w}')
  [ -n "$KB" ] || KB=0
}
measure() {
  reference
  measure_once "$@"
  if [ "$RC" = 0 ] && awk -v w="$W" 'BEGIN{exit !(w < 5)}'; then
    local ws=("$W") kb=$KB
    for _ in 1 2; do
      measure_once "$@"
      ws+=("$W"); [ "$KB" -gt "$kb" ] && kb=$KB
    done
    W=$(printf '%s\n' "${ws[@]}" | sort -g | sed -n 2p)
    KB=$kb
  fi
}
mib() { awk -v k="$1" 'BEGIN{printf "%.0f", k/1024}'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a <= b)}'; }
yes_no() { if "$@"; then echo yes; else echo "**no**"; fi; }
failed() {  # the reason a run gave no figure
  if [ "$RC" = 124 ]; then echo "timed out after ${limit} s"
  else echo "exit $RC: $(grep -m1 -iE 'error|refuse|cannot|not ' "$OUTF" | cut -c1-160 | tr '|' '/')"; fi
}

# --- scenario variants ------------------------------------------------------------------------
# variant SRC NAME KEY=VALUE...: copies SRC to $tmp/NAME.yaml with each "  KEY: ..." line set.
variant() {
  local src=$1 name=$2; shift 2
  local f=$tmp/$name.yaml
  sed "s/^name: .*/name: $name/" "$src" > "$f"
  for kv in "$@"; do
    local k=${kv%%=*} v=${kv#*=}
    grep -qE "^  $k: " "$f" || { echo "bench/run.sh: $src has no '  $k:' line" >&2; exit 2; }
    sed -i "s/^  $k: .*/  $k: $v/" "$f"
  done
  echo "$f"
}

# scale_series LABEL SLOW_FROM then lines "gpus file": simulate each, growth against the previous.
scale_series() {
  local label=$1 slow_from=$2; shift 2
  local prev_g="" prev_w=""
  while read -r g f; do
    [ -z "$g" ] && continue
    local fig; fig="$label, simulate at $(echo "$g" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') GPUs"
    local target="growth ≤ linear"
    [ "$g" = 16384 ] && target="$(tgt 1) and ≤ 1 GB"
    [ "$g" = 131072 ] && target="$(tgt 5)"
    if [ $quick = 1 ] && [ "$g" -ge "$slow_from" ]; then continue; fi
    if [ $dry = 1 ]; then row "$fig" "(dry run: $bin simulate $(basename "$f"))" "$target" "-"; continue; fi
    measure "$bin" simulate "$f"
    if [ "$RC" != 0 ]; then row "$fig" "$(failed)" "$target" "**no**"; prev_g=""; continue; fi
    # Growth in refs: each row against the row before, both read against their own yardstick.
    local met growth="" r; r=$(awk -v w="$W" -v x="$REF" 'BEGIN{print w/x}')
    if [ -n "$prev_g" ]; then
      growth=$(awk -v w="$r" -v pw="$prev_w" -v g="$g" -v pg="$prev_g" 'BEGIN{printf "%.1fx time for %.0fx GPUs", w/(pw>0.04?pw:0.04), g/pg}')
      local linear; linear=$(yes_no awk -v w="$r" -v pw="$prev_w" -v g="$g" -v pg="$prev_g" 'BEGIN{exit !(w <= (pw>0.04?pw:0.04)*g/pg)}')
      met=$linear
    else met="-"; fi
    case "$g" in
      16384) met="$(yes_no within "$W" 1) time, $(yes_no le "$KB" 976563) memory${growth:+, growth $met}" ;;
      131072) met="$(yes_no within "$W" 5)${growth:+, growth $met}" ;;
    esac
    row "$fig" "$(timed "$W"), $(mib "$KB") MiB${growth:+ ($growth)}" "$target" "$met"
    prev_g=$g prev_w=$r
  done
}

echo "clustersim bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# --- 0. start-up ------------------------------------------------------------------------------
# Issue 36: what every command pays before its own work, <= 20 ms and <= 20 MB. `--version` and
# `list` do next to nothing else: their whole process is the figure. For `simulate` of the
# default scenario the start-up is the time from exec to opening the scenario file (strace's
# timestamps: the loader, static initialisers, parsing the command line), the rest being the work;
# its peak RSS is counted whole (an upper bound of what start-up takes).
# /usr/bin/time counts wall time in 10 ms steps, too coarse for a 20 ms target: the start-up rows
# time their runs with bash's microsecond clock (which adds its own fork and exec, a fraction of
# a millisecond) and take the peak RSS from /usr/bin/time.
# measure_short CMD...: W = the median wall seconds of 5 runs, KB and RC as measure's.
measure_short() {
  measure "$@"   # RC, KB (and the yardstick, REF)
  local ws=() t0
  for _ in 1 2 3 4 5; do
    t0=$EPOCHREALTIME
    "$@" > /dev/null 2>&1
    ws+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.4f", b - a}')")
  done
  W=$(printf '%s\n' "${ws[@]}" | sort -g | sed -n 3p)
}
startup_row() {  # startup_row FIGURE CMD...: the whole process against the targets
  local fig=$1; shift
  if [ $dry = 1 ]; then row "$fig" "(dry run: $bin $*)" "$(tgt 0.02) and ≤ 20 MB" "-"; return; fi
  measure_short "$bin" "$@"
  if [ "$RC" != 0 ]; then row "$fig" "$(failed)" "$(tgt 0.02) and ≤ 20 MB" "**no**"; return; fi
  row "$fig" "$(timed "$W"), $(mib "$KB") MiB" "$(tgt 0.02) and ≤ 20 MB" "$(yes_no within "$W" 0.02) time, $(yes_no le "$KB" 19532) memory"
}
startup_row "start-up: clustersim --version" --version
startup_row "start-up: clustersim list" list
default_scenario=scenarios/gpt2-large-2xh100-ddp.yaml
fig="start-up: clustersim simulate $default_scenario (exec to opening the scenario; peak RSS of the whole run)"
if [ $dry = 1 ]; then row "$fig" "(dry run: strace -ttt $bin simulate $default_scenario)" "$(tgt 0.02) and ≤ 20 MB" "-"
elif ! command -v strace > /dev/null; then row "$fig" "strace is not installed" "$(tgt 0.02) and ≤ 20 MB" "**no**"
else
  measure "$bin" simulate "$default_scenario"   # the whole run: its RSS
  whole=$W
  # Median of 3 start-ups, each next to its own yardstick's reading (strace traces only execve and
  # openat, through seccomp, so the untraced start-up runs at full speed).
  ups=()
  for _ in 1 2 3; do
    strace -f --seccomp-bpf -ttt -e trace=execve,openat -o "$tmp/strace.txt" "$bin" simulate "$default_scenario" > /dev/null 2>&1
    up=$(awk -v f="$default_scenario" 'NR == 1 {t0 = $2} index($0, "\"" f "\"") {printf "%.4f", $2 - t0; exit}' "$tmp/strace.txt")
    ups+=("${up:-9}")
  done
  up=$(printf '%s\n' "${ups[@]}" | sort -g | sed -n 2p)
  row "$fig" "$(timed "$up") (whole run $(timed "$whole")), $(mib "$KB") MiB" "$(tgt 0.02) and ≤ 20 MB" "$(yes_no within "$up" 0.02) time, $(yes_no le "$KB" 19532) memory"
fi

# --- 1. engine events/s -----------------------------------------------------------------------
ev_fig() {
  case "$1" in
    BM_engine_mixed/*) echo "engine events/s, synthetic mixed graph (540,672 tasks, 256 ranks; 1 thread)" ;;
    BM_engine_mixed_memory_samples/*) echo "engine events/s, same graph, memory samples kept (as for --trace)" ;;
    BM_engine_compute_chain/*) echo "engine events/s, compute chains only (524,288 tasks, 64 ranks)" ;;
  esac
}
if [ $dry = 1 ]; then
  row "engine events/s, synthetic mixed graph (540,672 tasks, 256 ranks; 1 thread)" "(dry run: $ebench)" "≥ 20 M/s per core" "-"
elif [ ! -x "$ebench" ]; then
  row "engine events/s" "not built ($ebench: needs libbenchmark-dev and CLUSTERSIM_BENCH=ON)" "≥ 20 M/s per core" "**no**"
else
  mt=1; [ $quick = 1 ] && mt=0.3
  # The median of 5 repetitions: on a shared machine one repetition swings by a third.
  "$ebench" --benchmark_min_time="$mt" --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_format=json > "$tmp/engine.json" 2> "$tmp/engine.err"
  reference
  # Per core = over the thread's CPU time; the wall-clock rate (lower when the core is shared) beside
  # it. Met when the rate per CPU second, read against the yardstick's CPU time (a rate at the
  # nominal speed: cpurate x REF_CPU / ref_nominal), reaches the target.
  while IFS=$'\t' read -r name rate cpurate; do
    f=$(ev_fig "$name")
    norm=$(awk -v c="$cpurate" -v r="$REF_CPU" -v n="$ref_nominal" 'BEGIN{print c*r/n}')
    m=$(awk -v r="$rate" -v c="$cpurate" -v x="$norm" 'BEGIN{printf "%.1f M/s per CPU second (%.1f M/s wall), median of 5; %.1f M/s at the yardstick'"'"'s nominal speed", c/1e6, r/1e6, x/1e6}')
    if [[ $name == BM_engine_mixed/* ]]; then row "$f" "$m" "≥ 20 M/s per core" "$(yes_no le 20e6 "$norm")"
    else row "$f" "$m" "(reference)" "-"; fi
  done < <(jq -r '.benchmarks[] | select(.aggregate_name == "median") | [.name, .events_per_s, .events_per_cpu_s] | @tsv' "$tmp/engine.json")
fi

# --- 2. simulate, dense and MoE, 8 .. 131,072 GPUs --------------------------------------------
# GPT-3 175B as Megatron ran it (TP 8, PP 8, mb 1, 96 micro-batches per replica) with DP scaled:
# 8 GPUs = TP 8 alone, 64 = TP 8 x PP 8, then DP 16 .. 2,048; global batch 96 x DP.
g3=scenarios/gpt3-175b-1024xa100.yaml
{
  echo "8 $(variant $g3 gpt3-175b-8 nodes=1 pp=1 dp=1 global_batch=96)"
  echo "64 $(variant $g3 gpt3-175b-64 nodes=8 pp=8 dp=1 global_batch=96)"
  echo "1024 $g3"
  for dp in 64 256 2048; do
    echo "$((dp * 64)) $(variant $g3 gpt3-175b-$((dp * 64)) nodes=$((dp * 8)) dp=$dp global_batch=$((dp * 96)))"
  done
} > "$tmp/dense.list"
scale_series "GPT-3 175B (dense)" 16384 < "$tmp/dense.list"

# Mixtral 8x7B (EP 8 inside a node, ZeRO-1 over all ranks, 4 micro-batches per rank) with DP = GPUs.
mx=scenarios/mixtral-8x7b-16xh100-ep8.yaml
{
  for n in 1 8 128 512 2048 16384; do
    echo "$((n * 8)) $(variant $mx mixtral-8x7b-$((n * 8)) nodes=$n dp=$((n * 8)) global_batch=$((n * 32)))"
  done
} > "$tmp/moe.list"
scale_series "Mixtral 8x7B (MoE, EP 8)" 16384 < "$tmp/moe.list"

if [ $quick = 0 ]; then
  # DeepSeek-V3 as published (2,048 H800: PP 16, EP 64, DP 128) and with DP x 8.
  ds=scenarios/deepseek-v3-2048xh800.yaml
  {
    echo "2048 $ds"
    echo "16384 $(variant $ds deepseek-v3-16384 nodes=2048 dp=1024 global_batch=122880)"
  } > "$tmp/ds.list"
  # Issue 36 adds it to issue 18's models (GPT-3, Llama 3, Mixtral above): <= 1 s at 16,384.
  scale_series "DeepSeek-V3 (MoE, PP 16, EP 64)" 131073 < "$tmp/ds.list"

  # --- 3. Llama 3 405B at 16,384 GPUs -----------------------------------------------------------
  # The CP 16 variant is issue 36's (4.2 million tasks: CP ranks are simulated).
  for s in scenarios/llama3-405b-16384xh100.yaml scenarios/llama3-405b-16384xh100-cp16.yaml; do
    fig="Llama 3 405B, simulate $(basename "$s" .yaml)"
    target="$(tgt 1) and ≤ 1 GB"
    if [ $dry = 1 ]; then row "$fig" "(dry run)" "$target" "-"; continue; fi
    measure "$bin" simulate "$s"
    if [ "$RC" != 0 ]; then row "$fig" "$(failed)" "$target" "**no**"; continue; fi
    row "$fig" "$(timed "$W"), $(mib "$KB") MiB" "$target" "$(yes_no within "$W" 1) time, $(yes_no le "$KB" 976563) memory"
  done

  # --- 4. flow level, 1,024 GPUs ----------------------------------------------------------------
  # One representative rank per pipeline stage, each flow carrying its unsimulated replicas' load
  # on shared links (sim::ReplicaFolding); then every rank simulated, as the reference it should
  # match (same step time), next to it.
  fig="GPT-3 175B on 1,024 A100, simulate --fidelity flow"
  step_of() { awk '/^step time/{print $3 " " $4; exit}' "$OUTF"; }
  if [ $dry = 1 ]; then
    row "$fig (representative ranks, replicas folded)" "(dry run: $bin simulate $g3 --fidelity flow)" "$(tgt 10)" "-"
    row "$fig --ranks all (reference)" "(dry run)" "(reference)" "-"
  else
    measure "$bin" simulate $g3 --fidelity flow
    if [ "$RC" = 0 ]; then
      row "$fig (representative ranks, replicas folded)" "$(timed "$W"), $(mib "$KB") MiB (step time $(step_of))" "$(tgt 10)" "$(yes_no within "$W" 10)"
    else
      row "$fig (representative ranks, replicas folded)" "$(failed)" "$(tgt 10)" "**no**"
    fi
    measure "$bin" simulate $g3 --fidelity flow --ranks all
    if [ "$RC" = 0 ]; then
      row "$fig --ranks all (reference)" "$(timed "$W"), $(mib "$KB") MiB (step time $(step_of))" "(reference)" "-"
    else
      row "$fig --ranks all (reference)" "$(failed)" "(reference)" "-"
    fi
  fi
  # Issue 36's flow-level row: DeepSeek-V3 as published (2,048 H800), within 5 s. Its folded
  # all-to-alls load thousands of links each: the solver's incremental re-solve is what it times.
  fig="DeepSeek-V3 on 2,048 H800, simulate --fidelity flow"
  if [ $dry = 1 ]; then row "$fig" "(dry run: $bin simulate $ds --fidelity flow)" "$(tgt 5)" "-"
  else
    measure "$bin" simulate $ds --fidelity flow
    if [ "$RC" = 0 ]; then
      row "$fig" "$(timed "$W"), $(mib "$KB") MiB (step time $(step_of))" "$(tgt 5)" "$(yes_no within "$W" 5)"
    else row "$fig" "$(failed)" "$(tgt 5)" "**no**"; fi
  fi

  # --- 5. plan ----------------------------------------------------------------------------------
  # For Megatron-Core (plan's default stack, named so the row measures the same search if the
  # default changes): issue 33 keeps it within the same 5 s.
  fig="plan --model llama2-70b --cluster dgx_h100 --gpus 512 --global-batch 1024 --seq 4096 --stack megatron_core"
  if [ $dry = 1 ]; then row "$fig" "(dry run)" "$(tgt 5)" "-"
  else
    measure "$bin" plan --model llama2-70b --cluster dgx_h100 --gpus 512 --global-batch 1024 --seq 4096 --stack megatron_core
    if [ "$RC" = 0 ]; then
      space=$(grep -m1 -E '^enumerated' "$OUTF" | sed 's/  */ /g' | tr '|' '/')
      row "$fig${space:+ ($space)}" "$(timed "$W"), $(mib "$KB") MiB" "$(tgt 5)" "$(yes_no within "$W" 5)"
    else row "$fig" "$(failed)" "$(tgt 5)" "**no**"; fi
  fi
  # An MoE plan beside it (issue 18 names no target): DeepSeek-V3 on DeepSeek's own cluster size.
  fig="plan --model deepseek-v3 --cluster hgx_h800 --gpus 2048 --global-batch 15360 --seq 4096"
  if [ $dry = 1 ]; then row "$fig" "(dry run)" "(reference)" "-"
  else
    measure "$bin" plan --model deepseek-v3 --cluster hgx_h800 --gpus 2048 --global-batch 15360 --seq 4096
    if [ "$RC" = 0 ]; then
      space=$(grep -m1 -E '^enumerated' "$OUTF" | sed 's/  */ /g' | tr '|' '/')
      row "$fig${space:+ ($space)}" "$(timed "$W"), $(mib "$KB") MiB" "(reference)" "-"
    else row "$fig" "$(failed)" "(reference)" "-"; fi
  fi

  # --- 6. trace, 64 GPUs ------------------------------------------------------------------------
  if [ $dry = 1 ]; then row "trace, Llama 2 70B on 64 H100 (bench/trace_bench.sh)" "(dry run)" "$(tgt 10) and ≤ 1 GiB" "-"
  else
    reference   # one reading for the script's runs
    bash bench/trace_bench.sh "$bin" > "$tmp/trace.txt" 2>&1
    # trace_bench.sh rows: a two-word run name, wall_s, peak_MiB, file_MB, verdict.
    while read -r name wall mibv size; do
      name=${name//_/ }
      if [ "$name" = "no trace" ]; then row "trace bench: the same run without a trace" "$(timed "$wall"), ${mibv} MiB" "(reference)" "-"; continue; fi
      met="$(yes_no within "$wall" 10) time, $(yes_no le "$mibv" 1024) memory"
      row "trace, Llama 2 70B on 64 H100, all ranks, simulate $name (${size} MB file)" "$(timed "$wall"), ${mibv} MiB" "$(tgt 10) and ≤ 1 GiB" "$met"
    done < <(awk 'NR>1 && NF>=5 {print $1"_"$2, $3, $4, $5}' "$tmp/trace.txt")
    grep -q . "$tmp/trace.txt" || row "trace" "bench/trace_bench.sh printed nothing" "$(tgt 10) and ≤ 1 GiB" "**no**"
  fi
fi

# --- the table --------------------------------------------------------------------------------
{
  echo "# clustersim benchmark (issues 18 and 36)"
  echo
  echo "Taken $(date -u '+%Y-%m-%d %H:%M UTC') at commit $head (checkout at the start; the binaries are whatever $build holds) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
  echo "$(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo) memory, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); build: $build ($(grep -m1 CMAKE_BUILD_TYPE "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2))."
  echo "Command: \`bash bench/run.sh$([ $quick = 1 ] && echo ' --quick')$([ $dry = 1 ] && echo ' --dry')\`. Whole-process wall time (median of 3 when under 5 s) and peak RSS"
  echo "from /usr/bin/time -v; 1 GB = 10^9 B. ref: the yardstick bench/reference_loop.cpp timed just before the row (nominal $ref_nominal s);"
  echo "a time target is met when the row's multiple of it is within the target's. Growth: refs against the row before, met when they grew no faster than the GPUs."
  echo
  echo "| figure | measured | target | met? |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} > "$tmp/table.md"
cat "$tmp/table.md"
if [ -n "$out" ]; then cp "$tmp/table.md" "$out"; echo "written to $out" >&2; fi
# A full run into the committed results file: the docs' tables follow it.
if [ "$out" = bench/results.md ] && [ $quick = 0 ]; then docs_from bench/results.md; fi
