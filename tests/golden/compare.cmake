# ctest -P script for one golden test: runs `clustersim simulate INPUT` from SOURCE_DIR and compares
# its transcript with GOLDEN byte for byte. The transcript is what a user sees: stdout, then
# "--- stderr" and stderr when there is any, then "--- exit status N" when N is not 0; a report's
# golden is therefore the plain report, an error's golden ends with its message and status.
# With CLUSTERSIM_UPDATE_GOLDEN set in the environment (scripts/update-golden.sh sets it) the
# transcript is written to GOLDEN instead of compared.
#   cmake -DCLUSTERSIM=... -DSOURCE_DIR=... -DINPUT=scenarios/x.yaml -DGOLDEN=... -DOUT=... -P compare.cmake
execute_process(COMMAND ${CLUSTERSIM} simulate ${INPUT} WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
set(actual "${out}")
if(NOT err STREQUAL "")
  string(APPEND actual "--- stderr\n${err}")
endif()
if(NOT rc EQUAL 0)
  string(APPEND actual "--- exit status ${rc}\n")
endif()

if(DEFINED ENV{CLUSTERSIM_UPDATE_GOLDEN})
  file(WRITE ${GOLDEN} "${actual}")
  return()
endif()

set(regenerate "If the change is intended (a model or a message changed, or a merge brought such a change), regenerate every golden in one command: bash scripts/update-golden.sh, then review `git diff tests/golden` and commit it with the change.")
if(NOT EXISTS ${GOLDEN})
  message(FATAL_ERROR "${GOLDEN} does not exist. ${regenerate}")
endif()
file(READ ${GOLDEN} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${OUT} "${actual}")
  execute_process(COMMAND diff -u ${GOLDEN} ${OUT})
  message(FATAL_ERROR "clustersim simulate ${INPUT}: the output differs from ${GOLDEN} (diff above: - golden, + now). ${regenerate}")
endif()
