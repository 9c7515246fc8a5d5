// A scenario file: the model, the cluster, the layout and the training set-up, typed and
// validated. Every error names the file, line, column and key path and says what is valid.
#pragma once

#include <optional>
#include <string>

#include "common/error.h"
#include "cost_models/collective_model.h"
#include "cost_models/cost_model.h"
#include "cost_models/profile.h"
#include "models/model_spec.h"
#include "strategies/layout.h"
#include "topology/cluster_spec.h"
#include "topology/topology.h"
#include "training_run/inputs.h"

namespace cs::scenario {

class ScenarioError : public UserError {
 public:
  using UserError::UserError;
};

// The cluster_name of a cluster declared device by device and link by link.
inline constexpr const char* kCustomCluster = "custom";

struct Scenario {
  std::string file;
  std::string name;
  model::ModelSpec model;
  std::string cluster_name;   // preset name, or "custom"
  topo::ClusterSpec cluster;  // the preset with the file's changes (unused for "custom")
  std::string gpu;            // device spec name
  // A GPU declared in the file (`cluster.gpu` as a mapping, or a hardware file); nullopt: the
  // device preset `gpu` names.
  std::optional<cost::DeviceSpec> declared_gpu;
  int nodes = 1;
  int gpus = 1;
  // `network:` how collectives are modelled (fidelity) and chosen (forced algorithm/protocol).
  cost::NetworkFidelity fidelity = cost::NetworkFidelity::analytic;
  cost::CollectiveOptions collectives;
  // A calibrated profile (`profile:` key or --profile): replaces the device's datasheet figures.
  std::optional<cost::Profile> profile;
  strategy::Layout layout;
  strategy::TrainingSpec training;
  // `run:` the whole training run (tokens, price, power, failures, checkpoints); absent inputs
  // take training_run's stated defaults.
  training_run::RunInputs run;
  // A custom cluster, declared device by device and link by link (checked when parsed).
  struct DeviceDecl {
    std::string name;
    topo::DeviceKind kind;
    int node;
  };
  struct LinkDecl {
    std::string from, to;
    topo::LinkKind kind;
    BytesPerSecond bandwidth, reverse_bandwidth;
    SimTime latency;
  };
  std::vector<DeviceDecl> devices;
  std::vector<LinkDecl> links;

  // Whether the cluster is declared device by device (`devices` and `links`) rather than a
  // preset: `cluster` then means nothing, and nothing can rescale it.
  bool has_custom_cluster() const { return cluster_name == kCustomCluster; }
};

// Throws ScenarioError (file:line:column: key.path: message).
Scenario load_scenario(const std::string& path);
Scenario parse_scenario(const std::string& text, const std::string& file_name);

// The scenario's cluster as a topology.
topo::Topology build_topology(const Scenario& s);

}  // namespace cs::scenario
