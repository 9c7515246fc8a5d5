#include "planner/preset_scenario.h"

#include "common/error.h"
#include "models/model_spec.h"
#include "topology/cluster_spec.h"
#include "topology/placement.h"

namespace cs::planner {

scenario::Scenario preset_scenario(const PresetRequest& r) {
  scenario::Scenario s;
  s.name = "plan";
  s.file = "plan arguments";
  s.model = model::find_model_preset(r.model);
  const std::optional<topo::ClusterSpec> placed = topo::preset_for_gpus(r.cluster, r.gpus);
  if (!placed) {
    throw UserError("--gpus " + std::to_string(r.gpus) + " is not a whole number of " + r.cluster +
                    " nodes (" + topo::placement_rule(r.cluster) + ")");
  }
  s.cluster = *placed;
  s.nodes = s.cluster.nodes;
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
