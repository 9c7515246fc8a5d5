# ctest -P script: runs `clustersim simulate SCENARIO` and compares its output with GOLDEN byte for
# byte; on a difference prints both and fails (regenerate with scripts/update-golden.sh when the
# change is intended).
execute_process(COMMAND ${CLUSTERSIM} simulate ${SCENARIO} WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE actual ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clustersim simulate ${SCENARIO} exited ${rc}: ${err}")
endif()
file(READ ${GOLDEN} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${OUT} "${actual}")
  execute_process(COMMAND diff -u ${GOLDEN} ${OUT})
  message(FATAL_ERROR "${SCENARIO}: the report differs from ${GOLDEN} (diff above; scripts/update-golden.sh regenerates it if intended)")
endif()
