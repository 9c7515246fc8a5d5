# Issue 17, "one consistent command line" (cli/app.cpp, CLI11), as a user types it. The exit
# status is printed after the output so one regular expression pins both.
function(cs_cli_case name command regex)
  add_test(NAME cli.parser_${name} COMMAND sh -c "$<TARGET_FILE:clustersim> ${command} 2>&1; echo exit=$?" WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.parser_${name} PROPERTIES LABELS quick PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

# The version is CMake's project VERSION; the build names the commit it was configured from.
cs_cli_case(version "--version" "^clustersim ${PROJECT_VERSION} \\(commit [0-9a-f]+|unknown, [^,]+, [A-Za-z]+\\)\nexit=0\n$")
cs_cli_case(simulate_help "simulate --help" "Usage: clustersim simulate .*--fidelity analytic\\|flow.*exit=0\n$")
cs_cli_case(validate_help "validate --help" "Usage: clustersim validate .*--suite PATH.*exit=0\n$")
cs_cli_case(execute_help "execute --help" "Usage: clustersim execute .*--launcher auto\\|none\\|mpi\\|pmi\\|slurm.*exit=0\n$")
# --opt=value: the same 1 GiB ring all-reduce row as cli.bench_collective_table.
cs_cli_case(equals_form "bench-collective --cluster=dgx_h100 --gpus=8 --min=1GiB --max=1GiB --algo=ring --proto=simple"
  "1073741824 +268435456 +float +ring/Simple +5416\\.[0-9] +198\\.[0-9]+ +346\\.[0-9]+.*exit=0\n$")
cs_cli_case(unknown_option "simulate scenarios/gpt2-large-2xh100-ddp.yaml --no-such-option"
  "^error: The following argument was not expected: --no-such-option\nrun 'clustersim simulate --help' for the options\nexit=1\n$")
cs_cli_case(missing_value "sweep scenarios/gpt2-large-8xh100-ddp.yaml --gpus" "^error: --gpus: 1 required LIST missing\n.*exit=1\n$")

# Issue 16, nccl-tests logs both ways. The logs in tests/data/nccl_tests/ are hand-written in
# nccl-tests' layout; tests/nccl_tests_log_test.cpp derives the figures. calibrate fits the line
# 20 us + bus bytes / 183.5008 GB/s from an all_reduce and an all_gather log that lie on it;
# validate then compares the noisy all_reduce log with that line: errors -17.5, -10, 0, +20,
# -10, +10, 0, 0 % per size, MAPE 67.5 / 8 = 8.44%, worst +20.0% at 4 MiB (50 us measured, 60 predicted).
add_test(NAME cli.nccl_tests_calibrate_then_validate
         COMMAND sh -c "$<TARGET_FILE:clustersim> calibrate --nccl-tests tests/data/nccl_tests/all_reduce_8xh100_line.log tests/data/nccl_tests/all_gather_8xh100_line.log --out ${CMAKE_CURRENT_BINARY_DIR}/nccl_line.yaml && $<TARGET_FILE:clustersim> validate --nccl-tests tests/data/nccl_tests/all_reduce_8xh100_noisy.log --profile ${CMAKE_CURRENT_BINARY_DIR}/nccl_line.yaml; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.nccl_tests_calibrate_then_validate PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "fitted      20\\.00 us \\+ bus bytes / 183\\.50 GB/s \\(least squares of the relative error over 12 sizes\\).*all_reduce \\(line 1: all_reduce_perf\\), 8 GPUs on 1 host \\(NVIDIA H100 80GB HBM3\\), 8 sizes.* +4194304 +50\\.00 +60\\.00 +\\+20\\.0%.*MAPE 8\\.44% over 8 sizes, worst \\+20\\.0% at 4194304 B; the log's average bus bandwidth 117\\.17 GB/s\nexit=0")
# --max-error below the MAPE: exit status 1, saying so.
add_test(NAME cli.nccl_tests_validate_max_error
         COMMAND sh -c "$<TARGET_FILE:clustersim> calibrate --nccl-tests tests/data/nccl_tests/all_reduce_8xh100_line.log --out ${CMAKE_CURRENT_BINARY_DIR}/nccl_line_ar.yaml > /dev/null && $<TARGET_FILE:clustersim> validate --nccl-tests tests/data/nccl_tests/all_reduce_8xh100_noisy.log --profile ${CMAKE_CURRENT_BINARY_DIR}/nccl_line_ar.yaml --max-error 5; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.nccl_tests_validate_max_error PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "the MAPE of tests/data/nccl_tests/all_reduce_8xh100_noisy.log is beyond --max-error 5\\.0%\nexit=1")
# The published 8x H100 table (no Rank lines: --gpus 8) with the NCCL model over the topology:
# its 8 B row as the suite prints it (validate/suites/nccl_tests_8xh100.yaml: 14.0 us against 12.87).
add_test(NAME cli.nccl_tests_validate_published_table
         COMMAND clustersim validate --nccl-tests validate/data/nccl_tests_8xh100_awsome.txt --gpus 8 --cluster dgx_h100
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.nccl_tests_validate_published_table PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "predicted on dgx_h100 \\(1 node, ranks 0-7\\) with the NCCL 2\\.28 model.*\n +8 +12\\.87 +14\\.0[0-9] ")
# A row the parser cannot read: file, line, column and what is valid; exit status 1.
add_test(NAME cli.nccl_tests_bad_row
         COMMAND sh -c "$<TARGET_FILE:clustersim> validate --nccl-tests tests/data/nccl_tests/bad_row.log 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.nccl_tests_bad_row PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "^error: tests/data/nccl_tests/bad_row.log:17: in-place time 'nan': expected a number above 0 up to 1e\\+12\nexit=1\n$")

# validate --kineto: the hand-written two-step trace (tests/kineto_test.cpp derives the measured
# split: median step 410 us, gemm 105 us, exposed 35 us per step) against GPT-2 Large DDP on 2 H100.
add_test(NAME cli.validate_kineto_trace
         COMMAND clustersim validate --kineto tests/data/kineto/two_steps_ddp.json scenarios/gpt2-large-2xh100-ddp.yaml
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.validate_kineto_trace PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "measured step: median of 2 ProfilerSteps.*step time +predicted +[0-9.]+ ms +measured +0\\.410 ms.*gemm +predicted +[0-9.]+ ms +measured +0\\.105 ms.*all_reduce +predicted.*exposed +predicted +[0-9.]+ ms +measured +0\\.035 ms")
# The same trace alone (issue 32: no scenario): device 0's step 410 us, gemm 105 us (25.6%), NCCL
# 15 + 50 + 10 = 75 us per step of which 35 exposed (53.3% hidden, 8.5% of the step); device 1 has
# no NCCL kernel. The trace's deviceProperties and distributedInfo name the GPU and world size.
add_test(NAME cli.validate_kineto_without_scenario
         COMMAND clustersim validate --kineto tests/data/kineto/two_steps_ddp.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.validate_kineto_without_scenario PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "NVIDIA H100 80GB HBM3; rank 0 of 2; 2 devices in the trace.*device 0 +step +0\\.410 ms.*gemm +0\\.105 ms +25\\.6% of the step.*communication 0\\.075 ms, exposed \\(under no compute kernel\\) 0\\.035 ms: 53\\.3% hidden, 8\\.5% of the step exposed.*device 1 .*no communication kernels")
# A scenario of another GPU and world size than the trace's is compared with a warning for each.
add_test(NAME cli.validate_kineto_warns_unlike_runs
         COMMAND clustersim validate --kineto tests/data/kineto/two_steps_ddp.json scenarios/gpt2-large-16xcustom-cluster.yaml
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.validate_kineto_warns_unlike_runs PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "warning: the trace's run had 2 ranks \\(distributedInfo\\), the scenario 16 GPUs.*warning: the trace ran on NVIDIA H100 80GB HBM3, the scenario simulates mi300x")
