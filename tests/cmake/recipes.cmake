# The recipe check (issue 33, point 3): every published recipe of validate/recipes planned with the
# planner's defaults; its layout in the top 5, or beaten by a faster one with the reason. Label
# recipes (not quick: a plan per recipe; 2.7 CPU-minutes, 11 minutes on two cores shared with other
# builds on 2026-11-27). --max-failures is today's count of failures (9 on 2026-11-27 after the planner, memory and recipe merges: not in the
# search space, does not fit, missed; docs/recipes.md lists them) as a regression guard while the
# planner and the memory model are changed to fix them: lower it as they go.
add_test(NAME cli.validate_recipes
         COMMAND clustersim validate --recipes validate/recipes --max-failures 9
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.validate_recipes PROPERTIES LABELS recipes TIMEOUT 1200)
