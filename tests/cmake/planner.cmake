# plan (issue 14, point 7; issue 13): a GPU declared only in the scenario's YAML plans (the
# planner takes the scenario's device, not a preset by name), and a bad space flag is refused.
add_test(NAME cli.plan_declared_gpu
         COMMAND clustersim plan scenarios/gpt2-large-1xcustom-gpu.yaml --micro-batches 8 --recompute none --threads 1
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.plan_declared_gpu PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "gpt2-large on 1 x mi300x .*pruned      0 by the memory bound \\(169\\.87 GiB usable per GPU\\).* 1  tp1 pp1 dp1 mb8 rc:none")
add_test(NAME cli.plan_bad_recompute_message
         COMMAND sh -c "$<TARGET_FILE:clustersim> plan scenarios/gpt2-large-1xcustom-gpu.yaml --recompute some 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.plan_bad_recompute_message PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "--recompute 'some': valid values are none, selective, full.*exit=[1-9]")
# plan and sweep price layouts as simulate does: with the GPU's shipped profile unless --no-profile,
# and with the stack --stack (or the scenario) names, else megatron_core; the header says which.
add_test(NAME cli.plan_uses_shipped_profile_and_stack
         COMMAND clustersim plan --model gpt2-small --cluster dgx_h100 --gpus 2 --global-batch 8 --seq 1024 --micro-batches 4
                 --recompute none --buckets 25MiB --stack megatron_core --top 1 --threads 1
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.plan_uses_shipped_profile_and_stack PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "profile     h100_sxm \\(cuda: NVIDIA H100.*stack megatron_core: out-of-sample step time MAPE.*stack       megatron_core \\(fused elementwise chains")
add_test(NAME cli.plan_no_profile_says_datasheet
         COMMAND clustersim plan --model gpt2-small --cluster dgx_h100 --gpus 2 --global-batch 8 --seq 1024 --micro-batches 4
                 --recompute none --buckets 25MiB --no-profile --top 1 --threads 1
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.plan_no_profile_says_datasheet PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "profile     none: datasheet figures of h100_sxm.*stack       megatron_core .*\\(the default: .*margins     a layout leaves 3.98 GiB of 79.65 GiB free .*no measured error: no ties")
add_test(NAME cli.plan_bad_stack_message
         COMMAND sh -c "$<TARGET_FILE:clustersim> plan --model gpt2-small --cluster dgx_h100 --gpus 2 --global-batch 8 --seq 1024 --stack jax 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.plan_bad_stack_message PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "--stack 'jax': valid values are ideal, pytorch_eager, torch_compile, megatron_core, deepspeed.*exit=[1-9]")
