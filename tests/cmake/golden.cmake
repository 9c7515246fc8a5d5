# Golden outputs (issue 19, point 4): the `clustersim simulate` report of every shipped scenario and
# the exact messages of a handful of broken inputs, compared byte for byte by
# tests/golden/compare.cmake (label golden, and quick: each runs in under 5 s of CPU). They are
# regenerated only by `bash scripts/update-golden.sh`, which reruns these same tests in write mode,
# so the two cannot disagree on what a golden holds.
set(CS_GOLDEN_DIR ${PROJECT_SOURCE_DIR}/tests/golden)

function(cs_golden_test name input golden)
  add_test(NAME golden.${name}
           COMMAND ${CMAKE_COMMAND} -DCLUSTERSIM=$<TARGET_FILE:clustersim> -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                   -DINPUT=${input} -DGOLDEN=${golden} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/golden/${name}.txt
                   -P ${CS_GOLDEN_DIR}/compare.cmake)
  set_tests_properties(golden.${name} PROPERTIES LABELS "quick;golden" TIMEOUT 120)
endfunction()
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/golden)

# Every shipped scenario but those over ~5 s of CPU, listed here with their time (2026-11-23, after
# the moe-gaps and flow-fold merges): llama2-70b-64xh100 takes 12.2 CPU-s (9.3 user + 2.8 system;
# 2.1 before those merges). The slowest kept are llama3-405b-16384xh100-cp16 at 4.3 CPU-s and
# deepseek-v3-2048xh800 at 2.3; the rest under 1.5.
set(CS_GOLDEN_SKIP llama2-70b-64xh100)
file(GLOB CS_GOLDEN_SCENARIOS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/*.yaml)
foreach(f ${CS_GOLDEN_SCENARIOS})
  get_filename_component(name ${f} NAME_WE)
  if(NOT name IN_LIST CS_GOLDEN_SKIP)
    cs_golden_test(${name} scenarios/${name}.yaml ${CS_GOLDEN_DIR}/reports/${name}.txt)
  endif()
endforeach()

# Key error messages, one per kind a user meets first: an unknown key (lists the valid ones), an
# unknown preset (lists them), a value not in a choice, a size with a wrong unit, a missing
# required key, a layout that does not match the cluster, a link to a device that does not exist
# (lists the devices), a hardware file that is not there, a duplicate key, a second document, an
# unsupported combination (ZeRO-2 with a pipeline), a training run's input out of range, and the
# fuzzer's stray comma.
foreach(name unknown_key unknown_preset bad_schedule bad_unit missing_field layout_does_not_divide bad_link hw_missing_file
             h_duplicate_key h_second_document zero2_with_pipeline run_out_of_range)
  cs_golden_test(error.${name} tests/data/bad/${name}.yaml ${CS_GOLDEN_DIR}/errors/${name}.txt)
endforeach()
cs_golden_test(error.stray_comma tests/data/fuzz_regressions/scenario/timeout-890bc261e043cbe6862bdd9859e53d5d04baee0d
               ${CS_GOLDEN_DIR}/errors/stray_comma.txt)
