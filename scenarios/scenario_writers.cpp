#include "scenarios/scenario_writers.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "models/model_spec.h"
#include "scenarios/profile_io.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"
#include "topology/cluster_spec.h"

namespace cs::scenario {
namespace {

// `path` as the scenario reader resolves it (beside `file`), made absolute.
std::string absolute_beside(const std::string& file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  return std::filesystem::absolute(dir / path).lexically_normal().string();
}

YAML::Node layout_node(const strategy::Layout& l) {
  YAML::Node n;
  n["tp"] = l.tp;
  n["pp"] = l.pp;
  n["dp"] = l.dp;
  if (l.cp > 1) n["cp"] = l.cp;
  if (l.cp > 1 && l.cp_comm != model::CpComm::p2p)
    n["cp_comm"] = std::string(model::to_string(l.cp_comm));
  if (l.cp > 1 && l.cp_comm == model::CpComm::a2a_p2p) n["cp_a2a"] = l.cp_a2a;
  if (l.ep > 1) n["ep"] = l.ep;
  if (l.etp > 1) n["etp"] = l.etp;
  n["data_parallel"] = std::string(strategy::to_string(l.data_parallel));
  n["bucket_size"] = std::to_string(l.bucket_size.count) + "B";
  if (l.tp > 1) n["sequence_parallel"] = l.sequence_parallel;
  if (l.pp > 1) {
    n["schedule"] = std::string(strategy::to_string(l.schedule));
    if (l.virtual_stages > 1) n["virtual_stages"] = l.virtual_stages;
    if (l.first_stage_layers > 0) n["first_stage_layers"] = l.first_stage_layers;
    if (l.last_stage_layers > 0) n["last_stage_layers"] = l.last_stage_layers;
    if (l.embedding_in_split) n["account_for_embedding_in_pipeline_split"] = true;
    if (l.loss_in_split) n["account_for_loss_in_pipeline_split"] = true;
  }
  if (l.explicit_split())
    n["pipeline_layout"] = strategy::format_pipeline_layout(l.pipeline_layout.decoder_layers,
                                                            l.pipeline_layout.mtp_layers);
  n["order"] = strategy::order_string(l);
  return n;
}

YAML::Node training_node(const strategy::TrainingSpec& t) {
  YAML::Node n;
  n["global_batch"] = t.global_batch;
  n["micro_batch"] = t.micro_batch;
  n["seq_len"] = t.seq_len;
  n["precision"] = std::string(model::to_string(t.precision));
  n["attention"] = std::string(model::to_string(t.attention));
  n["recompute"] = std::string(model::to_string(t.recompute));
  // Only beside op_selective, which it qualifies (a plan may have swapped the recompute mode).
  if (t.recompute == model::Recompute::op_selective &&
      t.scaled_mm == model::ScaledMmSaving::recomputed)
    n["op_sac_scaled_mm"] = "recomputed";
  // Written always: the stack's defaults would otherwise decide them again.
  n["tp_comm_overlap"] = t.tp_comm_overlap;
  n["overlap_param_gather"] = t.overlap_param_gather;
  if (t.grad_reduce_in_bf16) n["grad_reduce_in_bf16"] = true;
  if (!t.overlap_p2p_comm) n["overlap_p2p_comm"] = false;
  if (t.scatter_gather_tensors_in_pipeline) n["scatter_gather_tensors_in_pipeline"] = true;
  if (t.bf16_optimizer_moments) n["optimizer_moments"] = "bf16";
  if (t.lora.enabled()) {
    YAML::Node peft;
    peft["method"] = "lora";
    peft["rank"] = t.lora.rank;
    peft["alpha"] = t.lora.alpha;
    peft["dropout"] = t.lora.dropout;
    for (model::LoraTarget target : t.lora.targets) {
      for (const auto& [name, value] : model::lora_target_names())
        if (value == target) peft["targets"].push_back(name);
    }
    n["peft"] = peft;
  }
  return n;
}

}  // namespace

std::string scenario_yaml(const scenario::Scenario& s, const std::vector<std::string>& header) {
  YAML::Node root;
  std::ifstream in(s.file);
  if (!s.file.empty() && in) {
    const YAML::Node base = YAML::LoadFile(s.file);
    root["name"] = s.name;
    if (base["description"]) root["description"] = base["description"];
    YAML::Node model = YAML::Clone(base["model"]);
    if (model["hf_config"])
      model["hf_config"] = absolute_beside(s.file, model["hf_config"].as<std::string>());
    root["model"] = model;
    YAML::Node cluster = YAML::Clone(base["cluster"]);
    if (cluster["file"])
      cluster["file"] = absolute_beside(s.file, cluster["file"].as<std::string>());
    if (cluster["gpu"] && cluster["gpu"].IsMap() && cluster["gpu"]["file"]) {
      cluster["gpu"]["file"] = absolute_beside(s.file, cluster["gpu"]["file"].as<std::string>());
    }
    root["cluster"] = cluster;
    if (base["profile"])
      root["profile"] = profile_reference(profile_file(base["profile"].as<std::string>(), s.file));
  } else {
    // A scenario built from plan's flags: a model preset on a cluster preset.
    root["name"] = s.name;
    root["model"]["preset"] = s.model.name;
    root["cluster"]["preset"] = s.cluster_name;
    root["cluster"]["nodes"] = s.nodes;
    // plan's --gpus below one node: a node of that many GPUs (a scenario uses whole nodes); on
    // NVL72 segments (topology/placement.h), the GPUs and NICs the job holds in each rack.
    if (s.gpus < s.cluster.node.gpus) root["cluster"]["node"]["gpus"] = s.gpus;
    if (s.cluster.node.gpus != topo::find_cluster_preset(s.cluster_name).node.gpus) {
      root["cluster"]["node"]["gpus"] = s.cluster.node.gpus;
      root["cluster"]["node"]["nics"] = s.cluster.node.nics;
    }
    if (s.profile && !s.profile->file.empty()) root["profile"] = profile_reference(s.profile->file);
  }
  root["network"]["fidelity"] = std::string(cost::to_string(s.fidelity));
  if (s.collectives.algorithm)
    root["network"]["algorithm"] = std::string(cost::to_string(*s.collectives.algorithm));
  if (s.collectives.protocol)
    root["network"]["protocol"] = std::string(cost::to_string(*s.collectives.protocol));
  if (s.training.stack != model::Stack::ideal)
    root["stack"] = std::string(model::to_string(s.training.stack));
  root["layout"] = layout_node(s.layout);
  root["training"] = training_node(s.training);
  const strategy::MoeRouting& moe = s.training.moe;
  if (moe.capacity_factor > 0) root["moe"]["capacity_factor"] = moe.capacity_factor;
  if (moe.pad_to_capacity) root["moe"]["pad_to_capacity"] = true;
  if (moe.imbalance != 1.0) root["moe"]["imbalance"] = moe.imbalance;
  if (moe.dispatcher != model::MoeDispatcher::alltoall)
    root["moe"]["dispatcher"] = std::string(model::to_string(moe.dispatcher));
  YAML::Emitter e;
  e << root;
  std::string out;
  for (const auto& h : header) out += "# " + h + "\n";
  return out + e.c_str() + "\n";
}

interop::LaunchTarget launch_target(const Scenario& s) {
  // A cluster smaller than one node (plan's --gpus below a node) runs on one node of that many.
  const int per_node =
      s.gpus < s.cluster.node.gpus || s.cluster.node.gpus <= 0 ? s.gpus : s.cluster.node.gpus;
  return {s.name, s.model, s.layout, s.training, s.gpus, per_node};
}

}  // namespace cs::scenario
