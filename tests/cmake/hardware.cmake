# Hardware declared in YAML (issue 14, point 6): the shipped examples simulate with the declared
# GPU, and bad figures exit non-zero with file:line:column: key: what is valid.
add_test(NAME cli.hardware_inline_gpu_simulates
         COMMAND clustersim simulate scenarios/gpt2-large-1xcustom-gpu.yaml
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# MFU is against the declared 1307.4 TFLOP/s bf16 peak, printed in whole TFLOP/s: 1307.
set_tests_properties(cli.hardware_inline_gpu_simulates PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "cluster +one_mi300x: 1 x mi300x \\(1 node\\).*MFU +[0-9.]+% of 1307 TFLOP/s dense bf16")
add_test(NAME cli.hardware_cluster_file_simulates
         COMMAND clustersim simulate scenarios/gpt2-large-16xcustom-cluster.yaml --no-baseline
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.hardware_cluster_file_simulates PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "cluster +mi300x_8gpu: 16 x mi300x \\(2 nodes\\).*infiniband")
add_test(NAME cli.hardware_bad_peak_exits_nonzero
         COMMAND clustersim simulate tests/data/bad/hw_peak_out_of_range.yaml
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.hardware_bad_peak_exits_nonzero PROPERTIES WILL_FAIL TRUE LABELS quick)
add_test(NAME cli.hardware_bad_peak_message
         COMMAND sh -c "$<TARGET_FILE:clustersim> simulate tests/data/bad/hw_peak_out_of_range.yaml 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.hardware_bad_peak_message PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "tests/data/bad/hw_peak_out_of_range.yaml:10:35: cluster.gpu.peak.bf16: 989 PFLOP/s is out of range: a dense peak per GPU is between 1 GFLOP/s and 100 PFLOP/s.*exit=[1-9]")
# Files named relative to the scenario: the message gives the path as resolved.
add_test(NAME cli.hardware_missing_file_message
         COMMAND sh -c "$<TARGET_FILE:clustersim> simulate tests/data/bad/hw_missing_file.yaml 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.hardware_missing_file_message PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "tests/data/bad/hw_missing_file.yaml:5:9: cluster.file: cannot open hardware file 'tests/data/bad/hardware/no_such_cluster.yaml'.*exit=[1-9]")
add_test(NAME cli.hardware_error_in_gpu_file_names_it
         COMMAND sh -c "$<TARGET_FILE:clustersim> simulate tests/data/bad/hw_file_bad_bandwidth.yaml 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.hardware_error_in_gpu_file_names_it PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "tests/data/bad/hw_gpu_file_bad_bandwidth.yaml:6:14: gpu.hbm.bandwidth: 3350 TB/s is out of range.*exit=[1-9]")
# The new presets are listed.
add_test(NAME cli.hardware_presets_listed COMMAND clustersim list)
set_tests_properties(cli.hardware_presets_listed PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "gb200_nvl72 +GB200 NVL72.*b200 +NVIDIA B200.*gb200 +NVIDIA Blackwell")
