// The scenario `clustersim plan --model M --cluster C --gpus N --global-batch B --seq S` searches:
// model and cluster presets instead of a scenario file (the layout is the planner's to choose).
// Above one node the GPUs must fill whole nodes, or NVL72 segments (topology/placement.h); a
// model with learned positions (GPT-2) cannot run a sequence beyond them, a rotary one can. Its
// errors name plan's flags, since that is where the figures come from. Tests:
// tests/preset_scenario_test.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "scenarios/scenario.h"

namespace cs::planner {

struct PresetRequest {
  std::string model, cluster;  // preset names (clustersim list)
  int gpus = 0;
  int64_t global_batch = 0, seq = 0;
  model::Precision precision = model::Precision::mixed_bf16;
  model::AttentionImpl attention = model::AttentionImpl::fused;
};

// Throws UserError for an unknown preset, GPUs that cannot be placed, or a sequence beyond a
// model's learned positions.
scenario::Scenario preset_scenario(const PresetRequest& r);

}  // namespace cs::planner
