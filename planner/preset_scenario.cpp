#include "planner/preset_scenario.h"

#include "common/error.h"
#include "models/model_spec.h"
#include "topology/cluster_spec.h"

namespace cs::planner {

scenario::Scenario preset_scenario(const PresetRequest& r) {
  scenario::Scenario s;
  s.name = "plan";
  s.file = "plan arguments";
  s.model = model::find_model_preset(r.model);
  const int per_node = topo::find_cluster_preset(r.cluster).node.gpus;
  if (r.gpus > per_node && r.gpus % per_node != 0) {
    throw UserError("--gpus " + std::to_string(r.gpus) + " is not a whole number of " + r.cluster +
                    " nodes (" + std::to_string(per_node) + " GPUs each)");
  }
  s.nodes = r.gpus > per_node ? r.gpus / per_node : 1;
  s.cluster = topo::preset_with_nodes(r.cluster, s.nodes);
  s.cluster_name = r.cluster;
  s.gpu = s.cluster.gpu;
  s.gpus = r.gpus;
  s.training.global_batch = r.global_batch;
  s.training.seq_len = r.seq;
  s.training.precision = r.precision;
  s.training.attention = r.attention;
  model::check_sequence_fits(s.model, r.seq, "--seq");
  return s;
}

}  // namespace cs::planner
