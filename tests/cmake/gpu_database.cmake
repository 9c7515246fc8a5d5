# Issue 37, point 3: the GPU database's script (scripts/gpu-database.sh) dry-runs without a GPU, so
# it cannot rot between device loans: the split is checked against its seed-37 rule, every trained
# config is written and read back by `clustersim import hf`, the kernel, attention and step stages
# write their files' layout from their shape lists (without torch they say SKIPPED), and the
# same-graph stage executes, simulates and validates three small graphs on the cpu backend. It
# must write every file the GPU run writes that does not need torch, in the layout that is
# committed (validate/measurements/<gpu>_<date>/). About 12 s on 2 idle cores.
set(CS_DATABASE_OUT ${CMAKE_CURRENT_BINARY_DIR}/gpu_database_dry_run)
set(CS_DATABASE_FILES environment.txt database.log summary.tsv
  kernels/gemm.csv kernels/grouped_gemm.csv kernels/memory_bound.csv
  steps/plan.csv steps/steps_pytorch_eager.csv steps/steps_torch_compile.csv)
foreach(arch llama-2-7b llama-3.2-3b qwen3-8b gemma-3-1b gpt2 gpt-oss-20b qwen3-30b-a3b
             qwen2.5-7b phi-3-mini-4k phi-4 mistral-7b-v0.1 pythia-70m mixtral-8x7b deepseek-v3)
  list(APPEND CS_DATABASE_FILES steps/configs/${arch}.json steps/configs/${arch}.import.txt)
endforeach()
foreach(run gpt-8x256 llama-gqa-tiny llama-mha-tiny)
  list(APPEND CS_DATABASE_FILES same_graph/scenarios/${run}.yaml)
  foreach(f timeline.json report.json execute.txt simulate.json validate.txt)
    list(APPEND CS_DATABASE_FILES same_graph/${run}/${f})
  endforeach()
endforeach()
string(REPLACE ";" " " CS_DATABASE_FILES "${CS_DATABASE_FILES}")
add_test(NAME cli.gpu_database_dry_run
         COMMAND sh -c "rm -rf ${CS_DATABASE_OUT} && PYTHONDONTWRITEBYTECODE=1 CLUSTERSIM_BIN=$<TARGET_FILE:clustersim> bash scripts/gpu-database.sh --dry-run ${CS_DATABASE_OUT} && cd ${CS_DATABASE_OUT} && for f in ${CS_DATABASE_FILES}; do test -s $f || { echo MISSING $f; exit 1; }; done && ls kernels/attention*.csv && grep 'split: 14 configs, OK' database.log && test $(cut -f2 summary.tsv | grep -c '^[0-9]') = 3 && echo every file present"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.gpu_database_dry_run PROPERTIES LABELS quick TIMEOUT 600
  PASS_REGULAR_EXPRESSION "gpu-database complete in [0-9]+s: 13 stages done \\(dry run.*\nevery file present"
  FAIL_REGULAR_EXPRESSION "MISSING")

# The stages' expected times (shapes x repetitions, `--estimate`) within the budgets
# scripts/gpu-database.sh gives them, less the 10 s each Python stage keeps for its end: the GEMM
# list at most 79 s of the kernel stage's 90, the attention list at most 65 s of its 75, every
# eager architecture within 135 s of its 145. A shape list grown without its budget fails here,
# not on a device call.
add_test(NAME scripts.gpu_database_estimate
         COMMAND bash scripts/gpu-database.sh --estimate
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(scripts.gpu_database_estimate PROPERTIES LABELS quick TIMEOUT 60
  PASS_REGULAR_EXPRESSION "gemm: [0-9]+ shapes, about [1-7]?[0-9] s.*90 shapes, about ([1-5]?[0-9]|6[0-5]) s.*pytorch_eager: about [0-9]+ s for 14 architectures [^\n]*; 14 fit 135 s")

# Campaign 2's same-graph runs on the H200 (validate/measurements/h200_20261128/same_graph):
# clustersim's executor ran three shapes no profile was fitted on (head dims 128 and 128/GQA, where
# the profile's executor attention was measured at 64); `validate --measured` with the shipped H200
# profile must predict each step within 10% (+8.4%, +0.7% and -5.2% on 2026-11-28, since the
# executor's attention is priced by its scores: +58.7%, +26.9% and +8.7% when priced by FLOPs).
set(CS_SAME_GRAPH validate/measurements/h200_20261128/same_graph)
add_test(NAME cli.same_graph_h200_20261128
         COMMAND sh -c "for r in gpt-8x1536 llama-gqa-3072 llama-mha-5120; do $<TARGET_FILE:clustersim> validate --measured ${CS_SAME_GRAPH}/$r/timeline.json ${CS_SAME_GRAPH}/scenarios/$r.yaml --profile profiles/h200.yaml | grep '^step time' | sed 's/.*error //; s/%//' | awk -v r=$r '{ e = $1 + 0; print r, e; if (e > 10 || e < -10) bad = 1 } END { exit bad }' || exit 1; done; echo all within 10%"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.same_graph_h200_20261128 PROPERTIES LABELS quick TIMEOUT 120
  PASS_REGULAR_EXPRESSION "all within 10%")
