# plan (issue 14, point 7; issue 13): a GPU declared only in the scenario's YAML plans (the
# planner takes the scenario's device, not a preset by name), and a bad space flag is refused.
add_test(NAME cli.plan_declared_gpu
         COMMAND clustersim plan scenarios/gpt2-large-1xcustom-gpu.yaml --micro-batches 8 --recompute none --threads 1
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.plan_declared_gpu PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "gpt2-large on 1 x mi300x .*pruned      0 by the memory bound \\(178\\.81 GiB per GPU\\).* 1  tp1 pp1 dp1 mb8 rc:none")
add_test(NAME cli.plan_bad_recompute_message
         COMMAND sh -c "$<TARGET_FILE:clustersim> plan scenarios/gpt2-large-1xcustom-gpu.yaml --recompute some 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.plan_bad_recompute_message PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "--recompute 'some': valid values are none, selective, full.*exit=[1-9]")
