# No function above cognitive complexity 40 in the folders that hold the modelling knowledge, the
# engine and the command line (scripts/complexity.sh runs clang-tidy's readability-function-cognitive-complexity
# over each folder's .cpp files). One test per folder so that ctest -j spreads them over the cores;
# about 6 CPU-s per file with clang-tidy 14.
foreach(folder common taskgraph topology cost_models models strategies sim driver planner cli workflows)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${folder})
    add_test(NAME lint.cognitive_complexity_${folder}
             COMMAND bash scripts/complexity.sh ${CMAKE_BINARY_DIR} ${folder}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(lint.cognitive_complexity_${folder} PROPERTIES LABELS lint TIMEOUT 900)
  endif()
endforeach()
