# Issue 17 (traces, HTML report, bottleneck in words) at the command line.
# A filtered .json.gz trace and an HTML report from one run: gzip -t checks the archive, the HTML
# file is there and ends with its closing tag.
add_test(NAME cli.reports_trace_gz_and_html
         COMMAND sh -c "$<TARGET_FILE:clustersim> simulate scenarios/gpt2-large-2xh100-ddp.yaml --no-baseline --trace ${CMAKE_CURRENT_BINARY_DIR}/reports_t.json.gz --trace-ranks 1 --trace-window 0:50 --html ${CMAKE_CURRENT_BINARY_DIR}/reports.html > /dev/null && gzip -t ${CMAKE_CURRENT_BINARY_DIR}/reports_t.json.gz && tail -c 8 ${CMAKE_CURRENT_BINARY_DIR}/reports.html && gzip -dc ${CMAKE_CURRENT_BINARY_DIR}/reports_t.json.gz | grep -c '\"pid\":0,' ; true"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# The trace keeps rank 1 only: no line names pid 0 (grep -c prints 0).
set_tests_properties(cli.reports_trace_gz_and_html PROPERTIES LABELS quick PASS_REGULAR_EXPRESSION "</html>\n0\n")
add_test(NAME cli.reports_bad_trace_ranks_message
         COMMAND sh -c "$<TARGET_FILE:clustersim> simulate scenarios/gpt2-large-2xh100-ddp.yaml --trace /dev/null --trace-ranks 7-3 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_bad_trace_ranks_message PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "error: --trace-ranks '7-3': '7-3' ends before it starts \\(expected ranks and ranges such as 0-7,16\\)\nexit=1")
add_test(NAME cli.reports_trace_filter_needs_trace
         COMMAND sh -c "$<TARGET_FILE:clustersim> simulate scenarios/gpt2-large-2xh100-ddp.yaml --trace-window 0:5 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_trace_filter_needs_trace PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "error: --trace-ranks and --trace-window need --trace FILE\nexit=1")
# Two nodes over InfiniBand (the issue's case: more IB bandwidth changes nothing): the report says
# the step is compute-bound and that more InfiniBand bandwidth will not help.
add_test(NAME cli.reports_bottleneck_two_nodes
         COMMAND clustersim simulate scenarios/gpt2-large-16xcustom-cluster.yaml --no-baseline
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_bottleneck_two_nodes PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "bottleneck  step bound by compute: [0-9]+% of the critical path[^\n]*\n +InfiniBand links at [0-9.]+% \\(busiest [0-9.]+%\\)[^\n]*more InfiniBand bandwidth will not help")
# plan --html, sweep --html and validate --html: a Pareto frontier with the ranked table, and the scaling curves;
# each page is self-contained (no address at all), names what it must, and opens in headless
# Chromium without a console message (tests/cmake/html_in_chromium.sh; skipped without Chromium).
set(CS_PLAN_HTML ${CMAKE_CURRENT_BINARY_DIR}/plan.html)
set(CS_SWEEP_HTML ${CMAKE_CURRENT_BINARY_DIR}/sweep.html)
# Every simulated layout is one point (as many circles with a tooltip as the text report says it
# simulated; the key's markers have none);
# --simulate 120 makes the plan simulate more than the 16 best-priced, so the page has 100+ points.
# Its stderr goes to a file: a plan that takes over 5 s (a busy machine) prints progress lines there.
add_test(NAME cli.reports_plan_html
         COMMAND sh -c "$<TARGET_FILE:clustersim> plan --model gpt2-large --cluster dgx_h100 --gpus 8 --global-batch 32 --seq 1024 --micro-batches 1,4 --recompute none,full --buckets 25MiB --simulate 120 --threads 2 --html ${CS_PLAN_HTML} > ${CS_PLAN_HTML}.txt 2> ${CS_PLAN_HTML}.err && n=$(sed -n 's/^simulated *\\([0-9]*\\) layouts.*/\\1/p' ${CS_PLAN_HTML}.txt) && [ $n -gt 100 ] && [ $(grep -c '<circle[^>]*data-tip' ${CS_PLAN_HTML}) -eq $n ] && echo one point per layout; grep -c 'http' ${CS_PLAN_HTML}; grep -o 'Pareto frontier: step time against peak memory per GPU\\|capacity 79.65 GiB\\|>best: [^<]*<' ${CS_PLAN_HTML}"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_plan_html PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "^one point per layout\n0\nPareto frontier: step time against peak memory per GPU\ncapacity 79.65 GiB\n>best: tp1 pp1 dp8 [^<]*<\n$")
add_test(NAME cli.reports_sweep_html
         COMMAND sh -c "$<TARGET_FILE:clustersim> sweep scenarios/gpt2-large-8xh100-ddp.yaml --gpus 1,2,4,8 --html ${CS_SWEEP_HTML} > /dev/null && grep -c 'http' ${CS_SWEEP_HTML}; grep -c '<svg' ${CS_SWEEP_HTML}"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_sweep_html PROPERTIES LABELS quick PASS_REGULAR_EXPRESSION "^0\n1\n")
# validate --suite --html over the whole suite (~3 s): self-contained, one chart per suite file,
# and every row run drawn once in its source's chart (class "row") and once in the overview (class
# "dot"); the rows run come from the text report.
set(CS_VALIDATE_HTML ${CMAKE_CURRENT_BINARY_DIR}/validate.html)
add_test(NAME cli.reports_validate_html
         COMMAND sh -c "$<TARGET_FILE:clustersim> validate --suite validate/suites --html ${CS_VALIDATE_HTML} > ${CS_VALIDATE_HTML}.txt; n=$(ls validate/suites/*.yaml | wc -l) && run=$(sed -n 's/^rows *\\([0-9]*\\) of .*/\\1/p' ${CS_VALIDATE_HTML}.txt | awk '{s+=$1} END {print s}') && [ $(grep -c '<svg class=\"source-chart\"' ${CS_VALIDATE_HTML}) -eq $n ] && echo one chart per source && [ $run -gt 50 ] && [ $(grep -o 'class=\"row\"' ${CS_VALIDATE_HTML} | wc -l) -eq $run ] && [ $(grep -o 'class=\"dot\"' ${CS_VALIDATE_HTML} | wc -l) -eq $run ] && echo every row run drawn; grep -c 'http' ${CS_VALIDATE_HTML}; grep -o 'Out-of-sample step-time error by profile and software stack\\|</html>' ${CS_VALIDATE_HTML}"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_validate_html PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "^one chart per source\nevery row run drawn\n0\nOut-of-sample step-time error by profile and software stack\n</html>\n$")
foreach(kind plan sweep validate)
  add_test(NAME cli.reports_${kind}_html_in_chromium
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cmake/html_in_chromium.sh ${CMAKE_CURRENT_BINARY_DIR}/${kind}.html ${CMAKE_CURRENT_BINARY_DIR}/${kind}-html.png)
  set_tests_properties(cli.reports_${kind}_html_in_chromium PROPERTIES LABELS quick SKIP_RETURN_CODE 77 DEPENDS cli.reports_${kind}_html TIMEOUT 300)
endforeach()
# --json and --html where validate has no one result to write are refused, not ignored.
add_test(NAME cli.reports_validate_json_refused_elsewhere
         COMMAND sh -c "$<TARGET_FILE:clustersim> validate --measured run.json scenarios/gpt2-small-1xh100.yaml --json /dev/null 2>&1; echo exit=$?; $<TARGET_FILE:clustersim> validate --table validate/data/vtrain_a100_single_node.csv --html /dev/null 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_validate_json_refused_elsewhere PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "^error: validate --json is written for --suite, --table, --kineto, --nccl-tests and --recipes only\nexit=1\nerror: validate --html is written for --suite only\nexit=1\n$")
# The report's training line says when TorchTitan's pre-2026-03 per-op policy recomputes every
# Float8 GEMM (training.op_sac_scaled_mm recomputed); the default (saved) adds nothing.
add_test(NAME cli.reports_names_recomputed_float8_gemms
         COMMAND sh -c "$<TARGET_FILE:clustersim> simulate scenarios/gpt2-large-2xh100-ddp.yaml --set training.precision=fp8 --set training.recompute=op_selective --set training.op_sac_scaled_mm=recomputed | grep '^training'"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_names_recomputed_float8_gemms PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "recompute op_selective \\(every low-precision GEMM recomputed: training\\.op_sac_scaled_mm\\)")
