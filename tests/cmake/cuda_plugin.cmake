# Issue 36, item 1: the cuda backend is a plugin (executor/cuda_plugin.h) loaded on first use
# (that no other command loads it or its libraries: backend_plugins.cmake). Without the plugin,
# `execute --backend cuda` names the library, where it was looked for and how to build it, and
# exits 1 as the build without nvcc always did.
add_test(NAME cli.cuda_plugin_missing_message
         COMMAND sh -c "CLUSTERSIM_CUDA_PLUGIN=/nonexistent/libclustersim_cuda.so $<TARGET_FILE:clustersim> execute scenarios/cpu-mlp-2rank-ddp.yaml --backend cuda 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.cuda_plugin_missing_message PROPERTIES LABELS quick PASS_REGULAR_EXPRESSION
  "--backend cuda: the cuda backend plugin libclustersim_cuda\\.so could not be loaded; tried:\n  /nonexistent/libclustersim_cuda\\.so: absent\nIt is built beside the clustersim program where the CUDA toolkit is .*target clustersim_cuda.*cmake --install.*CLUSTERSIM_CUDA_PLUGIN=PATH.*\nexit=1\n$")
# Where nvcc built the plugin: the program finds it beside itself and loads it for --backend cuda
# only (here, without a GPU, the plugin's own answer: no usable device; with GPUs, a run or the
# plugin's refusal of a 2-rank graph on fewer GPUs). Either way not the loader's message.
if(TARGET clustersim_cuda)
  add_test(NAME cli.cuda_plugin_loaded_on_use
           COMMAND sh -c "$<TARGET_FILE:clustersim> execute scenarios/cpu-mlp-2rank-ddp.yaml --backend cuda --steps 1 --warmup 0 2>&1; echo exit=$?"
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.cuda_plugin_loaded_on_use PROPERTIES LABELS quick
    PASS_REGULAR_EXPRESSION "exit=" FAIL_REGULAR_EXPRESSION "could not be loaded")
endif()
