# No function above cognitive complexity 40 in every source folder but executor/, whose cuda
# backend's kernel preparation is over and is changed only where a GPU can test it
# (scripts/complexity.sh runs clang-tidy's readability-function-cognitive-complexity over each
# folder's .cpp files). One test per folder so that ctest -j spreads them over the cores; about
# 6 CPU-s per file with clang-tidy 14.
foreach(folder common taskgraph topology cost_models models strategies sim reports scenarios interop
               driver planner validate training_run cli workflows python fuzz bench)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${folder})
    add_test(NAME lint.cognitive_complexity_${folder}
             COMMAND bash scripts/complexity.sh ${CMAKE_BINARY_DIR} ${folder}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(lint.cognitive_complexity_${folder} PROPERTIES LABELS lint TIMEOUT 900)
  endif()
endforeach()
