#!/usr/bin/env bash
# Every writer on a full disk (issue 34): each command below must exit non-zero, name the file and
# the system's reason, and leave no file under the target's name (nor a temporary one beside it).
# Two ways to fill the disk without mounting anything:
#   /dev/full       every write fails with ENOSPC ("No space left on device");
#   ulimit -f 0     a regular file may not grow at all: write() fails with EFBIG ("File too
#                   large") once SIGXFSZ is ignored, as on a disk with no free block.
# usage: tests/disk_full.sh CLUSTERSIM   (from the repository root)
set -u
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0 cases=0
scenario=scenarios/gpt2-large-2xh100-ddp.yaml
cpu_scenario=scenarios/cpu-mlp-2rank-ddp.yaml
execute="execute $cpu_scenario --warmup 0 --steps 1"
plan="plan --model gpt2-large --cluster dgx_h100 --gpus 8 --global-batch 64 --seq 1024 --top 3"
sweep="sweep $scenario --gpus 1,2"

# check NAME TARGET_IN_MESSAGE COMMAND...: runs COMMAND, which writes TARGET.
check() {
  local name=$1 target=$2; shift 2
  cases=$((cases + 1))
  local err rc
  err=$( ("$@") 2>&1 >/dev/null); rc=$?
  if [ "$rc" -eq 0 ]; then echo "FAIL $name: exit 0 (${err:0:200})"; fails=$((fails + 1)); return; fi
  if ! grep -q -e "cannot write '$target'" -e "cannot write standard output" <<<"$err"; then
    echo "FAIL $name: the message does not name '$target': ${err:0:300}"; fails=$((fails + 1)); return
  fi
  if [ "$target" != /dev/full ] && [ -e "$target" ]; then
    echo "FAIL $name: '$target' was left behind"; fails=$((fails + 1)); return
  fi
  echo "ok   $name: ${err:0:160}"
}

# A command in a shell whose files may not grow (ulimit -f 0); SIGXFSZ ignored so write() fails.
limited() { bash -c 'trap "" XFSZ; ulimit -f 0; exec "$@"' limited "$@"; }

# Each writer with its flag; @ is the target.
writers=(
  "simulate.json|$bin simulate $scenario --json @"
  "simulate.html|$bin simulate $scenario --html @"
  "simulate.trace|$bin simulate $scenario --trace @"
  "simulate.emit_megatron|$bin simulate $scenario --emit-megatron @"
  "plan.json|$bin $plan --json @"
  "plan.csv|$bin $plan --csv @"
  "plan.html|$bin $plan --html @"
  "sweep.csv|$bin $sweep --csv @"
  "sweep.json|$bin $sweep --json @"
  "sweep.html|$bin $sweep --html @"
  "sweep.plot|$bin $sweep --plot @"
  "validate_suite.json|$bin validate --suite validate/suites/nccl_tests_8xh100.yaml --json @"
  "validate_suite.html|$bin validate --suite validate/suites/nccl_tests_8xh100.yaml --html @"
  "simulate.stragglers_json|$bin simulate $scenario --stragglers-json @"
  "compare.json|$bin compare $scenario $scenario --json @"
  "compare.html|$bin compare $scenario $scenario --html @"
  "validate_table.csv|$bin validate --table tests/data/disk_full/vtrain_two_rows.csv --csv @"
  "validate_table.json|$bin validate --table tests/data/disk_full/vtrain_two_rows.csv --json @"
  "validate_recipes.json|$bin validate --recipes tests/data/disk_full/one_recipe.yaml --json @"
  "validate_kineto.json|$bin validate --kineto tests/data/kineto/two_steps_ddp.json $scenario --json @"
  "validate_nccl_tests.json|$bin validate --nccl-tests tests/data/nccl_tests/all_reduce_8xh100_line.log --json @"
  "calibrate_nccl_tests.out|$bin calibrate --nccl-tests tests/data/nccl_tests/all_reduce_8xh100_line.log --out @"
  "validate_measured.trace|$bin validate --measured $work/run.json $cpu_scenario --trace @"
)
# An executor run for validate --measured to read.
$bin $execute --timeline "$work/run.json" >/dev/null || { echo "FAIL: execute --timeline"; exit 1; }

for w in "${writers[@]}"; do
  name=${w%%|*} template=${w#*|}
  # shellcheck disable=SC2086
  check "$name on /dev/full" /dev/full ${template//@//dev/full}
  mkdir -p "$work/$name"
  target="$work/$name/out"
  # shellcheck disable=SC2086
  check "$name at ulimit -f 0" "$target" limited ${template//@/$target}
  left=$(ls -A "$work/$name")
  if [ -n "$left" ]; then echo "FAIL $name: left in its folder: $left"; fails=$((fails + 1)); fi
done
# Commands that start rank processes: on /dev/full only, since under ulimit -f 0 their ranks could
# not write their own result files either.
ranked_writers=(
  "execute.json|$bin $execute --json @"
  "execute.trace|$bin $execute --trace @"
  "execute.timeline|$bin $execute --timeline @"
  "calibrate_cpu.raw|$bin calibrate --backend cpu --out $work/cpu-profile.yaml --raw @"
)
for w in "${ranked_writers[@]}"; do
  name=${w%%|*} template=${w#*|}
  # shellcheck disable=SC2086
  check "$name on /dev/full" /dev/full ${template//@//dev/full}
done
# A gzip trace: the compressor's output goes through the same checked writes.
mkdir -p "$work/gz"
check "simulate.trace.gz at ulimit -f 0" "$work/gz/t.json.gz" limited "$bin" simulate "$scenario" --trace "$work/gz/t.json.gz"
[ -z "$(ls -A "$work/gz")" ] || { echo "FAIL trace.gz: left $(ls -A "$work/gz")"; fails=$((fails + 1)); }
# A Perfetto protobuf trace goes through the same block writer (its own encoder).
mkdir -p "$work/pf"
check "simulate.trace.pftrace at ulimit -f 0" "$work/pf/t.pftrace" limited "$bin" simulate "$scenario" --trace "$work/pf/t.pftrace"
[ -z "$(ls -A "$work/pf")" ] || { echo "FAIL trace.pftrace: left $(ls -A "$work/pf")"; fails=$((fails + 1)); }
# Standard output redirected to a full disk (an imported draft, a report).
check "import hf to stdout on /dev/full" /dev/full sh -c "$bin import hf tests/data/hf/llama-3.2-3b.json > /dev/full"
check "simulate to stdout on /dev/full" /dev/full sh -c "$bin simulate $scenario > /dev/full"
check "import megatron to stdout on /dev/full" /dev/full sh -c "$bin import megatron --file tests/data/megatron/llama3-8b-launch.sh > /dev/full"
check "import deepspeed to stdout on /dev/full" /dev/full sh -c "$bin import deepspeed tests/data/deepspeed/zero2-auto.json --model gpt2-large --gpus 8 > /dev/full"
check "bench-collective to stdout on /dev/full" /dev/full sh -c "$bin bench-collective --gpus 8 > /dev/full"
# Folders of files: each file whole or absent.
check "simulate.chakra at ulimit -f 0" "$work/chakra/clustersim.0.et" limited "$bin" simulate "$scenario" --chakra "$work/chakra"
check "plan.emit at ulimit -f 0" "$work/emit/rank1.yaml" limited "$bin" $plan --emit "$work/emit"
echo "$cases cases, $fails failed"
[ "$fails" -eq 0 ]
