#!/usr/bin/env bash
# Prints how long `clustersim simulate` takes (wall seconds, peak RSS) on growing task graphs.
# Figures, not pass/fail: compare them across commits. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./build/cli/clustersim
[ -x "$bin" ] || { echo "bench: build first (bash scripts/build.sh)" >&2; exit 1; }
printf '%-42s %10s %12s %10s\n' scenario tasks wall_s peak_MiB
for s in scenarios/gpt2-small-1xh100.yaml scenarios/gpt2-large-2xh100-ddp.yaml bench/gpt2-large-64xh100-ddp.yaml \
         scenarios/llama2-70b-64xh100.yaml scenarios/gpt3-175b-1024xa100.yaml; do
  out=$( { /usr/bin/time -f '%e %M' "$bin" simulate "$s" > /tmp/clustersim_bench.out; } 2>&1 | tail -1)
  tasks=$(awk '/^graph/{print $2}' /tmp/clustersim_bench.out)
  printf '%-42s %10s %12s %10.0f\n' "$s" "$tasks" "${out% *}" "$(awk -v k="${out#* }" 'BEGIN{print k/1024}')"
done

# Network: one ring all-reduce of 1 GiB over 1,024 GPUs (128 DGX H100 nodes, 8 rails) at the flow
# level, plan construction included; the target is under one second on one core.
echo
echo "flow-level ring all-reduce, 1 GiB over 1,024 GPUs (128 x dgx_h100):"
out=$( { /usr/bin/time -f '%e %M' "$bin" bench-collective --cluster dgx_h100 --nodes 128 --min 1GiB --max 1GiB \
         --algo ring --fidelity flow > /tmp/clustersim_bench.out; } 2>&1 | tail -1)
grep -E '^ +[0-9]|wall time' /tmp/clustersim_bench.out
printf '  process wall %s s, peak %.0f MiB\n' "${out% *}" "$(awk -v k="${out#* }" 'BEGIN{print k/1024}')"
for s in scenarios/llama2-7b-16xh100-tp8-dp2-flow.yaml scenarios/llama2-70b-64xh100.yaml; do
  out=$( { /usr/bin/time -f '%e %M' "$bin" simulate "$s" --fidelity flow > /tmp/clustersim_bench.out; } 2>&1 | tail -1)
  tasks=$(awk '/^graph/{print $2}' /tmp/clustersim_bench.out)
  printf '%-42s %10s %12s %10.0f  (flow level)\n' "$s" "$tasks" "${out% *}" "$(awk -v k="${out#* }" 'BEGIN{print k/1024}')"
done

# Planner: every layout of Llama 2 70B on 512 H100 (64 DGX H100), global batch 1024, sequence
# 4096; the target is at most 60 s on a 2-core machine.
echo
echo "plan: Llama 2 70B on 512 x H100, global batch 1024, seq 4096:"
out=$( { /usr/bin/time -f '%e %M' "$bin" plan --model llama2-70b --cluster dgx_h100 --gpus 512 --global-batch 1024 --seq 4096 \
         --top 3 > /tmp/clustersim_bench.out; } 2>&1 | tail -1)
grep -E '^(enumerated|pruned|simulated) |^ +[0-9]+ did not|^ +1  ' /tmp/clustersim_bench.out
printf '  process wall %s s, peak %.0f MiB, %s cores\n' "${out% *}" "$(awk -v k="${out#* }" 'BEGIN{print k/1024}')" "$(nproc)"

# Calibration and the closed loop on the cpu backend (issue "Calibrate and validate"): how long a
# calibration takes, and the loop's errors (they depend on how steady this machine is; see the
# README's loop section).
echo
echo "calibrate --backend cpu, then validate --loop (cpu-gpt-tiny-2rank-ddp, 5 passes):"
out=$( { /usr/bin/time -f '%e %M' "$bin" calibrate --backend cpu --out /tmp/clustersim_bench_profile.yaml > /tmp/clustersim_bench.out; } 2>&1 | tail -1)
printf '  calibrate wall %s s\n' "${out% *}"
"$bin" validate --loop scenarios/cpu-gpt-tiny-2rank-ddp.yaml | sed 's/^/  /'
