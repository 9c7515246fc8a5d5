# The recipe check (issue 33, point 3): every published recipe of validate/recipes planned with the
# planner's defaults; its layout in the top 5, or beaten by a faster one with the reason. Label
# recipes (not quick: a plan per recipe; 4.4 CPU-minutes for 65 expressible recipes, 2026-11-27).
# --max-failures is today's count of failures, a regression guard to lower as the planner is fixed:
# 9 on 2026-11-27 (65 of 80 recipes expressible, 18 more than the day before, with partial NVL72
# racks and the GPT-OSS, Kimi K2 and Qwen2.5 presets), 10 with Nemotron 3 (6 more recipes
# expressible); 6 since the closed-form price builds gpt-oss's full-attention layers (its three
# GPT-OSS 120B misses) and the check fits a recipe with the plan's headroom (Nemotron 3.5
# Lightning). Left: six DeepSeek-V3 layouts whose pipeline placement (Megatron's
# --pipeline-model-parallel-layout) the enumeration cannot produce; docs/recipes.md lists them.
add_test(NAME cli.validate_recipes
         COMMAND clustersim validate --recipes validate/recipes --max-failures 6
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# COST: ctest starts it first (on a fresh clone it has no timing yet), beside the short tests,
# rather than last and alone (it ran last, 275 s of the 478-s ctest pass, on 2026-11-27).
set_tests_properties(cli.validate_recipes PROPERTIES LABELS recipes TIMEOUT 1200 COST 10000)
