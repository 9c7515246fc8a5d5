// `clustersim validate --recipes validate/recipes`: the recipe check (issue 33). Each published
// training recipe (model, cluster, GPUs, sequence, global batch, precision, framework, and the
// layout its authors launched) is planned from scratch with planner::plan for the same model,
// cluster, GPUs, sequence, batch, precision and stack; the recipe's layout must then rank in the
// plan's top 5, or a layout the plan ranks above it must be faster for a reason read from the two
// simulated breakdowns (less compute, less exposed communication, less idle time), at a stated
// memory. A recipe the plan cannot search, one that does not fit by our count, and one whose
// layout the plan missed although it is faster than the plan's winner are failures: exactly what
// the planner or the memory model must fix. Rows the simulator cannot pose at all (no model
// preset, a cluster that is not whole nodes) are listed with the missing feature, not failed.
// Data: validate/recipes/*.yaml (validate/recipes/README.md). Tests: tests/recipe_check_test.cpp.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "planner/planner.h"

namespace cs::workflows {

// The knobs a published recipe states. Optional ones are free when unset: the plan may choose
// them (a recipe's data-parallel flavour, recompute and schedule, where its source is silent).
struct RecipeLayout {
  int tp = 1, pp = 1, cp = 1, vp = 1, ep = 1, etp = 1;
  int64_t micro_batch = 1;
  std::optional<strategy::DataParallel> data_parallel;
  std::optional<model::Recompute> recompute;
  // Unset: interleaved when vp > 1, else 1F1B (what Megatron runs for a VP of 1).
  std::optional<strategy::PipelineSchedule> schedule;
  strategy::PipelineSchedule expected_schedule() const;
};

struct Recipe {
  std::string name;            // as the source's table names the row
  std::string model, cluster;  // preset names (clustersim list)
  int gpus = 0;
  int64_t seq = 0, global_batch = 0;
  model::Precision precision = model::Precision::mixed_bf16;
  model::Stack stack = model::Stack::megatron_core;
  RecipeLayout layout;
  // Gradients kept and reduced in bf16 (Megatron-Core's --grad-reduce-in-bf16), where the source's
  // recipes set it: every Megatron-Bridge performance recipe does (_benchmark_common).
  bool grad_reduce_in_bf16 = false;
  // AdamW's moments in bf16 (`optimizer_moments: bf16`, Megatron-Core's precision-aware optimizer),
  // where the source's recipe sets it: Megatron-Bridge's DeepSeek-V3 recipes do.
  bool bf16_optimizer_moments = false;
  double published_tokens_per_second_per_gpu = 0;  // the source's figure, for the reader
  std::string not_expressible;  // the one missing feature, when the row cannot be posed
};

// One file of validate/recipes: a published table taken whole.
struct RecipeSource {
  std::string file, name, citation, licence;
  std::vector<Recipe> recipes;
};
// Every *.yaml of a folder (by name), or one file.
std::vector<RecipeSource> load_recipe_sources(const std::string& path);

// Whether candidate `c` is the recipe's layout: tp, pp, cp, ep, etp, VP, micro-batch and the
// schedule always; the data-parallel flavour and recompute where the recipe states them.
bool matches(const RecipeLayout& r, const planner::Candidate& c);
// The knobs the plan chose for the recipe ("data-parallel flavour, recompute, bucket size").
std::string free_knobs(const RecipeLayout& r);
// "tp4 pp8 vp5 mb1 zero1" as the recipe states it.
std::string describe(const RecipeLayout& r);

enum class Verdict : uint8_t {
  top5,             // the plan ranks the recipe's layout 1..5
  beaten,           // a faster layout ranks above it, with the reason
  does_not_fit,     // by our memory count (failure)
  not_searched,     // outside the plan's search space, or not simulated (failure)
  missed,           // faster than the plan's winner, yet not ranked (failure)
  not_expressible,  // the row cannot be posed (listed, not run)
};
std::string_view to_string(Verdict v);
bool is_failure(Verdict v);

// A simulated layout as the verdict quotes it.
struct PricedLayout {
  std::string layout;  // Candidate::describe()
  double step_seconds = 0;
  int64_t peak_memory = 0;
  double compute_seconds = 0, exposed_seconds = 0, idle_seconds = 0;  // per-rank means
};
PricedLayout priced_layout(const planner::Candidate& c, const planner::Evaluation& e);

// "beaten: W is 3.1% faster than the recipe's R (18.96 s vs 19.56 s per step): 0.45 s less idle
// time (pipeline bubble and waits), 0.12 s less exposed communication; at 71.81 GiB against
// 60.20 GiB".
std::string beaten_reason(const PricedLayout& winner, const PricedLayout& recipe);

struct RecipeCheck {
  Verdict verdict = Verdict::not_expressible;
  int rank = 0;        // 1-based among the plan's ranked layouts; 0 when not ranked
  std::string text;    // the verdict in words
  std::string chosen;  // the knobs the plan chose for the recipe (free_knobs)
  std::optional<PricedLayout> winner, recipe;
  double plan_seconds = 0;
};

// Plans the recipe's model on its cluster with the planner's default search space.
RecipeCheck check_recipe(const Recipe& r, const planner::PlanOptions& options);

struct RecipeCheckRequest {
  std::string path;  // a folder of recipe files, or one
  std::string json;  // --json FILE
  unsigned threads = 0;
  int max_failures = 0;   // exit status 1 when more recipes fail
  bool markdown = false;  // the tables of docs/recipes.md instead of the text rows
};
// The table of verdicts; exit status 1 when more than max_failures recipes fail.
int check_recipes(const RecipeCheckRequest& a, std::ostream& out);

}  // namespace cs::workflows
