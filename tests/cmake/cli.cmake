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
