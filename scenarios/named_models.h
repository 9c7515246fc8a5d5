// The one registry of the named cost models a scenario or a flag can choose: the network model,
// the collective algorithm and protocol, the software stack and the attention kernel. Each entry
// has its name, what it does and where its figures come from. The scenario reader, the CLI's
// flags and `clustersim list` all read these lists, so an unknown name is answered with the valid
// ones everywhere, and a name accepted in one place is accepted in all.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "cost_models/cost_model.h"
#include "cost_models/nccl_tables.h"
#include "models/software_stack.h"
#include "taskgraph/task_graph.h"

namespace cs::scenario {

template <class E>
struct NamedModel {
  std::string_view name;
  E value;
  std::string_view summary;  // what the model does, one line
  std::string_view source;   // where its figures or its rule come from
};

// `network.fidelity`, --fidelity.
const std::vector<NamedModel<cost::NetworkFidelity>>& network_models();
// `network.algorithm`, --algo; "auto" (nullopt) is NCCL's own choice.
const std::vector<NamedModel<std::optional<cost::Algorithm>>>& collective_algorithms();
// `network.protocol`, --proto; "auto" (nullopt) is NCCL's own choice.
const std::vector<NamedModel<std::optional<cost::Protocol>>>& collective_protocols();
// `stack`, --stack.
const std::vector<NamedModel<model::Stack>>& software_stacks();
// `training.attention_backend`.
const std::vector<NamedModel<ir::AttentionKernel>>& attention_kernels();

// (name, value) pairs, the form the scenario reader's choice() takes.
template <class E>
std::vector<std::pair<std::string, E>> name_value_pairs(const std::vector<NamedModel<E>>& models) {
  std::vector<std::pair<std::string, E>> out;
  for (const auto& m : models) out.emplace_back(std::string(m.name), m.value);
  return out;
}

template <class E>
std::vector<std::string> model_names(const std::vector<NamedModel<E>>& models) {
  std::vector<std::string> out;
  for (const auto& m : models) out.emplace_back(m.name);
  return out;
}

// The model called `name` from `models`, or a UserError "WHAT 'name': valid values are a, b, c".
template <class E>
E find_named_model(const std::vector<NamedModel<E>>& models, std::string_view what,
                   std::string_view name) {
  std::string valid;
  for (const auto& m : models) {
    if (m.name == name) return m.value;
    valid += (valid.empty() ? "" : ", ") + std::string(m.name);
  }
  throw UserError(std::string(what) + " '" + std::string(name) + "': valid values are " + valid);
}

// Every registry as text: a section per kind, each entry's name, summary and source.
std::string describe_named_models();

}  // namespace cs::scenario
