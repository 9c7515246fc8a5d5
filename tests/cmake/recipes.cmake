# The recipe check (issue 33, point 3): every published recipe of validate/recipes planned with the
# planner's defaults; its layout in the top 5, or beaten by a faster one with the reason. Label
# recipes (not quick: a plan per recipe; 4.4 CPU-minutes for 65 expressible recipes, 2026-11-27).
# --max-failures is the count of failures allowed: 0 since 2026-11-27, when the last ten were fixed
# (the closed-form price builds gpt-oss's full-attention layers; the check fits a recipe with the
# plan's headroom; the planner splits DeepSeek-V3's 61 layers unevenly over interleaved chunks, run
# by Megatron's --pipeline-model-parallel-layout). A recipe that fails now fails the test.
add_test(NAME cli.validate_recipes
         COMMAND clustersim validate --recipes validate/recipes --max-failures 0
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# COST: ctest starts it first (on a fresh clone it has no timing yet), beside the short tests,
# rather than last and alone (it ran last, 275 s of the 478-s ctest pass, on 2026-11-27).
# TIMEOUT is a hang guard, not a speed target: on two cores kept busy by other processes (issue
# 34's load test: two fuzzers at normal priority, helpers' builds; load average 8-9) it passed
# 1,200 s of wall time on 2026-11-27 while getting a fifth of a core.
set_tests_properties(cli.validate_recipes PROPERTIES LABELS recipes TIMEOUT 3600 COST 10000)
