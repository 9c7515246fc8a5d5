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
