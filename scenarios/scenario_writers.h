// What a scenario is written as: its YAML, which load_scenario reads back to the same step
// (`plan --emit`), and the target its launch files are written for (interop/launch_writers.h:
// Megatron-LM arguments, read back by `import megatron`, and a torchrun sketch).
#pragma once

#include <string>
#include <vector>

#include "interop/launch_writers.h"
#include "scenarios/scenario.h"

namespace cs::scenario {

// The scenario as YAML. When `s.file` is a scenario file, its model and cluster blocks are kept
// as written (relative paths in them made absolute, so the file runs from any folder) and its
// layout, training, stack and network blocks are replaced by `s`'s; a scenario built from plan's
// flags is written with model and cluster presets. `header` lines go first as comments.
std::string scenario_yaml(const Scenario& s, const std::vector<std::string>& header);

// The scenario's model, layout and training on its GPUs, as the launch writers take them.
interop::LaunchTarget launch_target(const Scenario& s);

}  // namespace cs::scenario
