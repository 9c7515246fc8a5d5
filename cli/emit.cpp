#include "cli/emit.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "models/model_spec.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"

namespace cs::cli {
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
  }
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
  // Written always: the stack's defaults would otherwise decide them again.
  n["tp_comm_overlap"] = t.tp_comm_overlap;
  n["overlap_param_gather"] = t.overlap_param_gather;
  return n;
}

bool is_megatron_precision(model::Precision p) { return p != model::Precision::tf32; }

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
      root["profile"] = absolute_beside(s.file, base["profile"].as<std::string>());
  } else {
    // A scenario built from plan's flags: a model preset on a cluster preset.
    root["name"] = s.name;
    root["model"]["preset"] = s.model.name;
    root["cluster"]["preset"] = s.cluster_name;
    root["cluster"]["nodes"] = s.nodes;
    // plan's --gpus below one node: a node of that many GPUs (a scenario uses whole nodes).
    if (s.gpus < s.cluster.node.gpus) root["cluster"]["node"]["gpus"] = s.gpus;
    if (s.profile && !s.profile->file.empty())
      root["profile"] = std::filesystem::absolute(s.profile->file).string();
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

std::vector<std::string> megatron_arguments(const scenario::Scenario& s,
                                            std::vector<std::string>& notes) {
  const model::ModelSpec& m = s.model;
  const strategy::Layout& l = s.layout;
  const strategy::TrainingSpec& t = s.training;
  std::vector<std::string> a;
  auto add = [&](const std::string& flag, auto value) {
    std::ostringstream o;
    o << flag << " " << value;
    a.push_back(o.str());
  };
  if (m.family == model::Family::mlp)
    throw UserError("an MLP model has no Megatron-LM equivalent (Megatron-LM trains transformers)");
  // The model.
  add("--num-layers", m.layers);
  add("--hidden-size", m.hidden);
  add("--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) {
    a.push_back("--group-query-attention");
    add("--num-query-groups", m.kv_heads);
  }
  add("--ffn-hidden-size", m.ffn_hidden);
  if (m.head_dim_explicit > 0) add("--kv-channels", m.head_dim_explicit);
  add("--padded-vocab-size", m.vocab);  // as simulated; Megatron's own padding would change it
  add("--seq-length", t.seq_len);
  add("--max-position-embeddings", m.max_seq);
  if (m.family == model::Family::llama) {
    a.insert(a.end(), {"--swiglu", "--normalization RMSNorm", "--disable-bias-linear",
                       "--position-embedding-type rope"});
    if (m.has_qkv_bias()) a.push_back("--add-qkv-bias");
  } else if (m.family == model::Family::gpt_neox) {
    a.push_back("--position-embedding-type rope");
    notes.push_back(
        "family gpt_neox: its parallel residual has no Megatron-LM flag (same parameters, "
        "sequential residual)");
  }
  if (!m.tied_embeddings()) a.push_back("--untie-embeddings-and-output-weights");
  if (m.qk_norm) a.push_back("--qk-layernorm");
  const double default_dropout = m.family == model::Family::gpt ? 0.1 : 0.0;
  if (m.dropout != default_dropout) add("--hidden-dropout", m.dropout);
  if (m.moe.enabled()) {
    add("--num-experts", m.moe.experts);
    add("--moe-router-topk", m.moe.top_k);
    add("--moe-ffn-hidden-size", m.moe.expert_ffn_hidden);
    if (m.moe.shared_experts > 0)
      add("--moe-shared-expert-intermediate-size", m.moe.shared_ffn_hidden * m.moe.shared_experts);
    add("--moe-token-dispatcher-type", model::to_string(t.moe.dispatcher));
    if (t.moe.capacity_factor > 0) add("--moe-expert-capacity-factor", t.moe.capacity_factor);
    if (t.moe.pad_to_capacity) a.push_back("--moe-pad-expert-input-to-capacity");
    if (t.moe.imbalance != 1.0)
      notes.push_back(
          "moe.imbalance describes the routing's outcome; Megatron-LM has no flag for it");
    if (m.moe.first_dense_layers > 0 || m.moe.layer_step != 1 || !m.moe.dense_layers.empty()) {
      notes.push_back(
          "the MoE layer pattern (dense layers) needs --moe-layer-freq written by hand");
    }
  }
  if (m.mla.enabled())
    notes.push_back("multi-latent attention: add --multi-latent-attention and its ranks by hand");
  if (m.mtp_depth > 0) add("--mtp-num-layers", m.mtp_depth);
  // The layout.
  add("--tensor-model-parallel-size", l.tp);
  add("--pipeline-model-parallel-size", l.pp);
  if (l.cp > 1) add("--context-parallel-size", l.cp);
  if (l.ep > 1) add("--expert-model-parallel-size", l.ep);
  if (m.moe.enabled() && l.tp > 1)
    add("--expert-tensor-parallel-size", l.etp);  // Megatron's default would be tp
  if (l.sequence_parallel && l.tp > 1) a.push_back("--sequence-parallel");
  auto take = [&](const strategy::LaunchArgs& from) {
    a.insert(a.end(), from.args.begin(), from.args.end());
    notes.insert(notes.end(), from.notes.begin(), from.notes.end());
  };
  take(strategy::data_parallel_flavour(l.data_parallel).megatron_args(l));
  if (l.pp > 1) {
    take(strategy::pipeline_schedule_flavour(l.schedule).megatron_args(l));
    if (l.first_stage_layers > 0) add("--decoder-first-pipeline-num-layers", l.first_stage_layers);
    if (l.last_stage_layers > 0) add("--decoder-last-pipeline-num-layers", l.last_stage_layers);
  }
  if (strategy::order_string(l) != "tp-cp-dp-pp")
    notes.push_back("rank order " + strategy::order_string(l) +
                    ": Megatron-LM orders tp-cp-ep-dp-pp");
  // Training.
  add("--micro-batch-size", t.micro_batch);
  add("--global-batch-size", t.global_batch);
  switch (t.precision) {
    case model::Precision::mixed_bf16:
    case model::Precision::amp_bf16:
      a.push_back("--bf16");
      break;
    case model::Precision::mixed_fp16:
    case model::Precision::amp_fp16:
      a.push_back("--fp16");
      break;
    case model::Precision::fp8:
      a.insert(a.end(), {"--bf16", "--fp8-format hybrid"});
      break;
    case model::Precision::fp8_rowwise:
      a.insert(a.end(), {"--bf16", "--fp8-format hybrid"});
      notes.push_back(
          "precision fp8_rowwise: torchao's rowwise scaling; Megatron-LM runs Transformer "
          "Engine's per-tensor FP8 here");
      break;
    case model::Precision::fp32:
      break;
    case model::Precision::tf32:
      break;
  }
  if (!is_megatron_precision(t.precision))
    notes.push_back(
        "precision tf32: Megatron-LM trains in fp32 (TF32 GEMMs are PyTorch's default)");
  if (t.attention == model::AttentionImpl::eager) a.push_back("--attention-backend unfused");
  switch (t.recompute) {
    case model::Recompute::none:
      break;
    case model::Recompute::selective:
      a.push_back("--recompute-granularity selective");
      break;
    case model::Recompute::full:
      a.insert(a.end(), {"--recompute-granularity full", "--recompute-method uniform",
                         "--recompute-num-layers 1"});
      break;
    case model::Recompute::op_selective:
      notes.push_back(
          "recompute op_selective is TorchTitan's per-op checkpointing; Megatron-LM's nearest is "
          "--recompute-granularity selective");
      a.push_back("--recompute-granularity selective");
      break;
  }
  a.push_back("--overlap-grad-reduce");  // gradient buckets reduce during backward, as simulated
  if (t.tp_comm_overlap) a.push_back("--tp-comm-overlap");
  if (t.overlap_param_gather) a.push_back("--overlap-param-gather");
  return a;
}

std::string megatron_launch_script(const scenario::Scenario& s) {
  std::vector<std::string> notes;
  const std::vector<std::string> args = megatron_arguments(s, notes);
  const int per_node =
      s.gpus < s.cluster.node.gpus || s.cluster.node.gpus <= 0 ? s.gpus : s.cluster.node.gpus;
  const int nodes = (s.gpus + per_node - 1) / per_node;
  std::ostringstream o;
  o << "#!/bin/bash\n# Megatron-LM launch for clustersim scenario '" << s.name
    << "': " << s.model.name << ", " << s.gpus << " GPUs, TP " << s.layout.tp << " x PP "
    << s.layout.pp << " x CP " << s.layout.cp << " x DP " << s.layout.dp << "\n"
    << "# written by clustersim; `clustersim import megatron --file THIS` reads it back.\n"
    << "# Add the data, tokenizer, learning-rate and checkpoint arguments of your run.\n";
  for (const auto& n : notes) o << "# note: " << n << "\n";
  o << "torchrun --nnodes " << nodes << " --nproc-per-node " << per_node << " pretrain_gpt.py";
  for (const auto& a : args) o << " \\\n    " << a;
  o << "\n";
  return o.str();
}

std::string torchrun_sketch(const scenario::Scenario& s) {
  const strategy::Layout& l = s.layout;
  const strategy::TrainingSpec& t = s.training;
  const int per_node =
      s.gpus < s.cluster.node.gpus || s.cluster.node.gpus <= 0 ? s.gpus : s.cluster.node.gpus;
  const int nodes = (s.gpus + per_node - 1) / per_node;
  const strategy::DataParallelFlavour& flavour = strategy::data_parallel_flavour(l.data_parallel);
  const bool fsdp = flavour.fsdp();
  const bool bf16 =
      t.precision == model::Precision::mixed_bf16 || t.precision == model::Precision::amp_bf16 ||
      t.precision == model::Precision::fp8 || t.precision == model::Precision::fp8_rowwise;
  const bool fp16 =
      t.precision == model::Precision::mixed_fp16 || t.precision == model::Precision::amp_fp16;
  std::ostringstream o;
  o << "# torchrun / PyTorch configuration sketch for clustersim scenario '" << s.name << "' ("
    << s.model.name << ", " << s.gpus << " GPUs).\n"
    << "# Launch: torchrun --nnodes " << nodes << " --nproc-per-node " << per_node << " train.py\n"
    << "# A sketch of the settings that decide the step, not a training script: fill in the model "
       "and data.\n"
    << "import torch\nimport torch.distributed as dist\nfrom torch.distributed.device_mesh import "
       "init_device_mesh\n\n"
    << "dist.init_process_group(\"nccl\")\n"
    << "# Mesh, outermost first: pp " << l.pp << ", dp " << l.dp << ", cp " << l.cp << ", tp "
    << l.tp << " (clustersim order " << strategy::order_string(l) << ", innermost first)\n"
    << "mesh = init_device_mesh(\"cuda\", (" << l.pp << ", " << l.dp << ", " << l.cp << ", " << l.tp
    << "), mesh_dim_names=(\"pp\", \"dp\", \"cp\", \"tp\"))\n";
  if (l.tp > 1) {
    o << "# Tensor parallel " << l.tp << (l.sequence_parallel ? " with sequence parallelism" : "")
      << ": torch.distributed.tensor.parallel.parallelize_module(block, mesh[\"tp\"], "
         "{ColwiseParallel / RowwiseParallel plan"
      << (l.sequence_parallel ? ", SequenceParallel for the norms" : "") << "})\n";
  }
  if (l.cp > 1)
    o << "# Context parallel " << l.cp
      << ": torch.distributed.tensor.experimental.context_parallel(mesh[\"cp\"], ...)\n";
  if (l.pp > 1) {
    o << "# Pipeline " << l.pp << " stages, schedule " << strategy::to_string(l.schedule)
      << ": torch.distributed.pipelining.Schedule"
      << strategy::pipeline_schedule_flavour(l.schedule).torch_schedule_class()
      << ", n_microbatches=" << t.accumulation(l) << "\n";
  }
  o << "MICRO_BATCH = " << t.micro_batch << "    # sequences per GPU per micro-batch\n"
    << "GLOBAL_BATCH = " << t.global_batch << "  # sequences per optimizer step ("
    << t.accumulation(l) << " micro-batches per replica)\n"
    << "SEQ_LEN = " << t.seq_len << "\n";
  o << flavour.torchrun_setup(l, bf16 ? "bfloat16" : fp16 ? "float16" : "float32");
  if (!fsdp && (bf16 || fp16))
    o << "autocast = torch.autocast(\"cuda\", dtype=torch." << (bf16 ? "bfloat16" : "float16")
      << ")\n";
  if (t.precision == model::Precision::tf32) o << "torch.backends.cuda.matmul.allow_tf32 = True\n";
  if (t.precision == model::Precision::fp8)
    o << "# fp8: Transformer Engine's "
         "fp8_autocast(fp8_recipe=DelayedScaling(fp8_format=Format.HYBRID))\n";
  if (t.precision == model::Precision::fp8_rowwise)
    o << "# fp8_rowwise: torchao.float8.convert_to_float8_training(model, "
         "config=Float8LinearConfig.from_recipe_name(\"rowwise\"))\n";
  switch (t.recompute) {
    case model::Recompute::none:
      break;
    case model::Recompute::full:
      o << "# Recompute every block: "
           "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_"
           "checkpointing(model)\n";
      break;
    default:
      o << "# Recompute " << model::to_string(t.recompute)
        << ": checkpoint the attention core (selective) or every second matmul (op_selective)\n";
  }
  o << "optimizer = torch.optim.AdamW(model.parameters(), fused=True)\n";
  return o.str();
}

}  // namespace cs::cli
