// A scenario file: the model, the cluster, the layout and the training set-up, typed and
// validated. Every error names the file, line, column and key path and says what is valid.
#pragma once

#include <map>
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

// `degraded:` one piece of hardware slower than its healthy peers (a straggler): a GPU or a whole
// node computing at `factor` of its speed (a throttled clock, a failing HBM stack: every kernel
// of its ranks takes 1 / factor as long), or the NIC a GPU leaves its node through passing
// `factor` of its bandwidth (a link trained down to a lower rate, a flapping port). factor in
// (0, 1].
struct Degradation {
  enum class Target : uint8_t { gpu, node, nic_of_gpu };
  Target target = Target::gpu;
  int index = 0;  // the GPU's rank, the node's index, or the rank of the GPU whose NIC
  double factor = 1.0;
  // "gpu 5 compute 0.8x", as the reports and errors name it.
  std::string describe() const;
};

// `--set key=value`: a dotted key path of the scenario file (layout.tp) and a YAML value
// (4, fsdp_full_shard, [{gpu: 0, compute: 0.8}]) that replaces or adds it before the file is read.
struct KeyOverride {
  std::string key, value;
};
// "layout.tp=4" -> {layout.tp, 4}; throws UserError when there is no '=' or no key.
KeyOverride parse_override(const std::string& text);

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
  std::vector<Degradation> degraded;  // empty: every GPU, node and NIC healthy

  // Whether the cluster is declared device by device (`devices` and `links`) rather than a
  // preset: `cluster` then means nothing, and nothing can rescale it.
  bool has_custom_cluster() const { return cluster_name == kCustomCluster; }
};

// A scenario file's text, at most kMaxYamlFileBytes (common/text_file.h); ScenarioError if it
// cannot be read or is larger. load_scenario and the Python module read files through it.
std::string read_scenario_text(const std::string& path);
// Throws ScenarioError (file:line:column: key.path: message; an overridden key has no line).
Scenario load_scenario(const std::string& path, const std::vector<KeyOverride>& overrides = {});
Scenario parse_scenario(const std::string& text, const std::string& file_name,
                        const std::vector<KeyOverride>& overrides = {});
// The file's keys after the overrides, as dotted paths (list items as path[i]) and their values:
// what `compare` lists as changed between two scenarios.
std::map<std::string, std::string> scenario_keys(const std::string& path,
                                                 const std::vector<KeyOverride>& overrides = {});

// The scenario's cluster as a topology, its degraded NICs at their reduced bandwidth.
topo::Topology build_topology(const Scenario& s);
// The compute speed of every GPU by rank (1 healthy; a degraded GPU or node its factor, the
// lowest where entries overlap); empty when no GPU or node is degraded.
std::vector<double> compute_rates(const Scenario& s, const topo::Topology& t);

}  // namespace cs::scenario
