# Issue 17, "a library": this build installed into a prefix inside the build tree, then
# tests/consumer/ (a separate project) configured with find_package(clustersim), built and run:
# it simulates a two-GPU GEMM + all-reduce graph through the public API and checks the timeline.
# The consumer links with this build's linker flags: under ASan+UBSan (scripts/sanitize.sh) the
# installed libraries need the sanitizer runtimes.
set(CS_CONSUMER ${CMAKE_CURRENT_BINARY_DIR}/consumer)
set(CS_CONSUMER_LAUNCHER "")
if(CCACHE_PROGRAM)
  set(CS_CONSUMER_LAUNCHER -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE_PROGRAM})
endif()
add_test(NAME library.consumer_find_package
         COMMAND sh -c "rm -rf ${CS_CONSUMER} && mkdir -p ${CS_CONSUMER} && ${CMAKE_COMMAND} --install ${PROJECT_BINARY_DIR} --prefix ${CS_CONSUMER}/prefix > ${CS_CONSUMER}/install.log && ${CMAKE_COMMAND} -S ${PROJECT_SOURCE_DIR}/tests/consumer -B ${CS_CONSUMER}/build -G \"${CMAKE_GENERATOR}\" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER} \"-DCMAKE_EXE_LINKER_FLAGS=${CMAKE_EXE_LINKER_FLAGS}\" ${CS_CONSUMER_LAUNCHER} -DCMAKE_PREFIX_PATH=${CS_CONSUMER}/prefix > ${CS_CONSUMER}/configure.log && ${CMAKE_COMMAND} --build ${CS_CONSUMER}/build > ${CS_CONSUMER}/build.log && ${CS_CONSUMER}/build/consumer || { tail -n 40 ${CS_CONSUMER}/*.log; exit 1; }")
set_tests_properties(library.consumer_find_package PROPERTIES LABELS quick TIMEOUT 300
  PASS_REGULAR_EXPRESSION "rank 0: gemm 0\\.000\\.\\.[0-9.]+ ms, all_reduce [0-9.]+\\.\\.[0-9.]+ ms\nrank 1: [^\n]*\nstep [0-9.]+ ms\nconsistent\n")

# An installed clustersim finds the profiles its install put in PREFIX/share/clustersim/profiles
# (issue 32: an installed clustersim silently used datasheet figures), not the source tree's.
set(CS_INSTALLED ${PROJECT_BINARY_DIR}/installed-profiles)
add_test(NAME cli.installed_clustersim_finds_its_profiles
         COMMAND sh -c "rm -rf ${CS_INSTALLED} && ${CMAKE_COMMAND} --install ${PROJECT_BINARY_DIR} --prefix ${CS_INSTALLED} > /dev/null && ${CS_INSTALLED}/bin/clustersim list")
set_tests_properties(cli.installed_clustersim_finds_its_profiles PROPERTIES
  PASS_REGULAR_EXPRESSION "measured profiles \\(a scenario's `profile: NAME`\\), in [^\n]*/installed-profiles/share/clustersim/profiles:\n  a100_sxm_80gb\n  h100_sxm\n")
