// Megatron-LM launch arguments a parallelism contributes (interop/launch_writers.cpp writes them),
// with notes where Megatron-LM has no flag for what the scenario runs.
#pragma once

#include <string>
#include <vector>

namespace cs::strategy {

struct LaunchArgs {
  std::vector<std::string> args, notes;
};

}  // namespace cs::strategy
