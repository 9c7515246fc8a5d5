// `clustersim plan` (rank every layout that fits) and `clustersim sweep` (the scenario at each
// value of one axis): the planner's search printed, and written as JSON, CSV and HTML.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/planner.h"
#include "planner/sweep.h"
#include "scenarios/scenario.h"
#include "training_run/inputs.h"

namespace cs::workflows {

// The names of planner::Objective, as --objective takes them and the plan's header prints them
// (the models/ convention of a name table; it belongs beside the enum in planner/planner.h).
const std::vector<std::pair<std::string, planner::Objective>>& objective_names();
std::string to_string(planner::Objective o);

// What plan was asked (cli/plan_command.cpp reads the flags into it): a scenario file, or a model
// and cluster preset with the batch and sequence; the search space and where to write the result.
struct PlanRequest {
  std::string scenario_file;
  std::string model, cluster, json_path, csv_path, html_path;
  model::Precision precision = model::Precision::mixed_bf16;
  model::AttentionImpl attention = model::AttentionImpl::fused;
  int gpus = 0, top = 10;
  int64_t global_batch = 0, seq = 0;
  bool want_explain = false;
  // Overrides the scenario's; with neither, planner::kDefaultPlanStack.
  std::optional<model::Stack> stack;
  // --grad-reduce-in-bf16: Megatron-Core's flag of that name (training.grad_reduce_in_bf16).
  bool grad_reduce_in_bf16 = false;
  bool timing = false;  // --timing: the search's wall-clock seconds in --json (else deterministic)
  std::string profile;  // --profile; by default the GPU's shipped profile
  bool no_profile = false;
  planner::PlanSpace space;
  planner::PlanOptions options;  // without a progress callback: progress_bar()
  training_run::RunInputs run;   // --tokens, --usd-per-gpu-hour, ...: the winner's training run
  // --stragglers: the printed rows (at most kStragglerRows) re-simulated with one slow GPU, node
  // and NIC, and ordered by how little they suffer.
  bool stragglers = false;
};
inline constexpr size_t kStragglerRows = 5;

// The plan's scenario and search, and the exit status: 1 when no layout fits (or none was
// simulated), with the reason printed.
struct PlanRun {
  int status = 0;
  scenario::Scenario base;
  planner::PlanResult result;
};
PlanRun plan(PlanRequest request, std::ostream& out);

struct SweepRequest {
  std::string scenario_file;
  std::string profile;  // --profile; by default the GPU's shipped profile
  bool no_profile = false;
  std::string csv_path, plot_path, html_path, json_path;
  std::optional<planner::SweepAxis> axis;
  std::vector<std::string> values;
  unsigned threads = 0;
};
// The exit status: 1 when a point failed to simulate.
int sweep(const SweepRequest& request, std::ostream& out);

// Progress on stderr: on a terminal a bar redrawn in place, otherwise a line now and then.
std::function<void(const char*, size_t, size_t)> progress_bar();

// "31.53 GiB".
std::string format_gib(int64_t bytes);

// `plan --emit DIR`: the first `top` ranked layouts as rankN.yaml (a scenario that simulates to
// the plan's step), rankN.megatron.sh (Megatron-LM) and rankN.torchrun.py (a torchrun sketch).
void emit_layouts(const std::string& dir, const scenario::Scenario& base,
                  const planner::PlanResult& r, int top, std::ostream& out);

}  // namespace cs::workflows
