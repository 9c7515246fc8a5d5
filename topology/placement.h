// How a job of N GPUs is placed on a cluster preset (`plan --cluster C --gpus N`, the recipe
// check): up to one node, one node with the job on N of its GPUs; above, whole nodes, or on
// NVL72 racks segments of one rack's NVLink domain (the rule and its source: presets.cpp).
// Tests: tests/preset_scenario_test.cpp.
#pragma once

#include <optional>
#include <string>

#include "topology/cluster_spec.h"

namespace cs::topo {

// The preset `name` sized for `gpus` GPUs: its nodes, and on a segment (NVL72: 64 GPUs of a
// 72-GPU rack) node.gpus and node.nics cut to the GPUs and NICs the job holds in each.
// std::nullopt when the count cannot be placed (placement_rule says what can); UserError for an
// unknown preset.
std::optional<ClusterSpec> preset_for_gpus(const std::string& name, int gpus);
// What counts place above one node: "8 GPUs each", or for NVL72 "72 GPUs each, or 64 GPUs of
// each in one NVLink domain".
std::string placement_rule(const std::string& name);

}  // namespace cs::topo
