# Issue 36: the backends' libraries are loaded only by the commands that run on them. The cuda
# backend (cudart, cuBLASLt, NCCL) and the cpu backend's rank (OpenBLAS, Gloo) are plugins
# (executor/plugin_loader.h); `--version`, `list` and `simulate` of the default scenario neither
# link nor load any of them, while `execute --backend cpu` loads the cpu plugin, OpenBLAS and Gloo
# (the check's proof that it sees a loaded library; backend_libraries_check.sh says how it reads
# what was loaded).
add_test(NAME cli.backend_libraries_not_loaded_at_start
         COMMAND sh tests/cmake/backend_libraries_check.sh $<TARGET_FILE:clustersim>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.backend_libraries_not_loaded_at_start PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "^ldd: links no backend library\n--version: loads no backend library\nlist: loads no backend library\nsimulate: loads no backend library\nexecute --backend cpu: loads libclustersim_cpu libgloo libopenblas \n$")

# Without the cpu plugin, `execute` fails before starting any rank, once, saying where it looked
# and which packages it needs.
add_test(NAME cli.cpu_plugin_missing_message
         COMMAND sh -c "CLUSTERSIM_CPU_PLUGIN=/nonexistent/libclustersim_cpu.so $<TARGET_FILE:clustersim> execute scenarios/cpu-mlp-2rank-ddp.yaml 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.cpu_plugin_missing_message PROPERTIES LABELS quick PASS_REGULAR_EXPRESSION
  "^execution failed:\nthe cpu backend plugin libclustersim_cpu\\.so could not be loaded; tried:\n  /nonexistent/libclustersim_cpu\\.so: absent\nIt is built beside the clustersim program \\(target clustersim_cpu\\).*cmake --install.*OpenBLAS and Gloo.*libopenblas0-pthread libgloo0.*CLUSTERSIM_CPU_PLUGIN=PATH.*\nexit=5\n$")
