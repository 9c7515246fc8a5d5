# Issue 15, point 2: the GPU campaign's script (scripts/gpu-validate.sh) dry-runs on the cpu
# backend, every stage of it: environment record, build (the binary under test), the gpu tests
# (which skip without a device, saying why), calibrate --backend cpu, execute and validate
# --measured for two small cpu scenarios and a two-point batch sweep (generated scenarios), the
# summary. It must write every file the GPU run writes, in the layout that is committed
# (profiles/, validate/measurements/<scenario>/). About 10 s on 2 idle cores.
set(CS_CAMPAIGN_OUT ${CMAKE_CURRENT_BINARY_DIR}/gpu_campaign_dry_run)
set(CS_CAMPAIGN_FILES
  environment.txt gpu-tests.txt summary.tsv campaign.log
  profiles/cpu.yaml profiles/cpu.raw.csv profiles/calibrate.txt
  validate/measurements/scenarios/sweep-fp32-b1.yaml validate/measurements/scenarios/sweep-fp32-b2.yaml)
foreach(run cpu-mlp-2rank-ddp cpu-gpt-tiny-2rank-ddp sweep-fp32-b1 sweep-fp32-b2)
  foreach(f timeline.json report.json execute.txt validate.txt side_by_side.json)
    list(APPEND CS_CAMPAIGN_FILES validate/measurements/${run}/${f})
  endforeach()
endforeach()
string(REPLACE ";" " " CS_CAMPAIGN_FILES "${CS_CAMPAIGN_FILES}")
add_test(NAME cli.gpu_campaign_dry_run
         COMMAND sh -c "rm -rf ${CS_CAMPAIGN_OUT} && CLUSTERSIM_BIN=$<TARGET_FILE:clustersim> CLUSTERSIM_GPU_TESTS=$<TARGET_FILE:clustersim_gpu_tests> bash scripts/gpu-validate.sh --dry-run ${CS_CAMPAIGN_OUT} && cd ${CS_CAMPAIGN_OUT} && for f in ${CS_CAMPAIGN_FILES}; do test -s $f || { echo MISSING $f; exit 1; }; done && grep -c SKIPPED gpu-tests.txt && echo every file present"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.gpu_campaign_dry_run PROPERTIES LABELS quick TIMEOUT 600
  PASS_REGULAR_EXPRESSION "campaign complete in [0-9]+s: 12 stages done \\(dry run.*\nevery file present"
  FAIL_REGULAR_EXPRESSION "MISSING")
