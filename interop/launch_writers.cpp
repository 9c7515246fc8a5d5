#include "interop/launch_writers.h"

#include <sstream>

#include "common/error.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"

namespace cs::interop {
namespace {

// Megatron-LM's argument list being written, with what it cannot express.
struct Arguments {
  std::vector<std::string>& args;
  std::vector<std::string>& notes;

  template <class V>
  void add(const std::string& flag, const V& value) {
    std::ostringstream o;
    o << flag << " " << value;
    args.push_back(o.str());
  }
  void flag(const std::string& f) { args.push_back(f); }
  void flags(std::initializer_list<const char*> fs) {
    args.insert(args.end(), fs.begin(), fs.end());
  }
  void note(const std::string& n) { notes.push_back(n); }
  void take(const strategy::LaunchArgs& from) {
    args.insert(args.end(), from.args.begin(), from.args.end());
    notes.insert(notes.end(), from.notes.begin(), from.notes.end());
  }
};

void family_arguments(const model::ModelSpec& m, Arguments& a) {
  if (m.family == model::Family::llama) {
    a.flags({"--swiglu", "--normalization RMSNorm", "--disable-bias-linear",
             "--position-embedding-type rope"});
    if (m.has_qkv_bias()) a.flag("--add-qkv-bias");
  } else if (m.family == model::Family::gpt_neox) {
    a.flag("--position-embedding-type rope");
    a.note(
        "family gpt_neox: its parallel residual has no Megatron-LM flag (same parameters, "
        "sequential residual)");
  }
  if (!m.tied_embeddings()) a.flag("--untie-embeddings-and-output-weights");
  if (m.qk_norm) a.flag("--qk-layernorm");
  const double default_dropout = m.family == model::Family::gpt ? 0.1 : 0.0;
  if (m.dropout != default_dropout) a.add("--hidden-dropout", m.dropout);
}

void moe_arguments(const model::ModelSpec& m, const strategy::MoeRouting& r, Arguments& a) {
  a.add("--num-experts", m.moe.experts);
  a.add("--moe-router-topk", m.moe.top_k);
  a.add("--moe-ffn-hidden-size", m.moe.expert_ffn_hidden);
  if (m.moe.shared_experts > 0)
    a.add("--moe-shared-expert-intermediate-size", m.moe.shared_ffn_hidden * m.moe.shared_experts);
  a.add("--moe-token-dispatcher-type", model::to_string(r.dispatcher));
  if (r.capacity_factor > 0) a.add("--moe-expert-capacity-factor", r.capacity_factor);
  if (r.pad_to_capacity) a.flag("--moe-pad-expert-input-to-capacity");
  if (r.imbalance != 1.0)
    a.note("moe.imbalance describes the routing's outcome; Megatron-LM has no flag for it");
  if (m.moe.first_dense_layers > 0 || m.moe.layer_step != 1 || !m.moe.dense_layers.empty())
    a.note("the MoE layer pattern (dense layers) needs --moe-layer-freq written by hand");
}

void model_arguments(const model::ModelSpec& m, const strategy::TrainingSpec& t, Arguments& a) {
  a.add("--num-layers", m.layers);
  a.add("--hidden-size", m.hidden);
  a.add("--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) {
    a.flag("--group-query-attention");
    a.add("--num-query-groups", m.kv_heads);
  }
  a.add("--ffn-hidden-size", m.ffn_hidden);
  if (m.head_dim_explicit > 0) a.add("--kv-channels", m.head_dim_explicit);
  a.add("--padded-vocab-size", m.vocab);  // as simulated; Megatron's own padding would change it
  a.add("--seq-length", t.seq_len);
  a.add("--max-position-embeddings", m.max_seq);
  family_arguments(m, a);
  if (m.moe.enabled()) moe_arguments(m, t.moe, a);
  if (m.mla.enabled())
    a.note("multi-latent attention: add --multi-latent-attention and its ranks by hand");
  if (m.mtp_depth > 0) a.add("--mtp-num-layers", m.mtp_depth);
}

// Whether Megatron-LM splits the layers over the model chunks as `l` does from its other flags:
// evenly, by --decoder-first/last-pipeline-num-layers, or counting the embedding and the loss.
// Any other split (an explicit layout, or layers that do not divide by the chunks) needs
// --pipeline-model-parallel-layout: without it Megatron-LM refuses the layer count.
bool megatron_derives_split(const strategy::Layout& l, int layers) {
  if (l.explicit_split()) return false;
  if (l.embedding_in_split || l.loss_in_split) return true;
  if (l.virtual_stages == 1 && (l.first_stage_layers > 0 || l.last_stage_layers > 0)) return true;
  return layers % (l.pp * l.virtual_stages) == 0;
}

void layout_arguments(const model::ModelSpec& m, const strategy::Layout& l, Arguments& a) {
  a.add("--tensor-model-parallel-size", l.tp);
  a.add("--pipeline-model-parallel-size", l.pp);
  if (l.cp > 1) a.add("--context-parallel-size", l.cp);
  if (l.cp > 1 && l.cp_comm != model::CpComm::p2p)
    a.add("--cp-comm-type", std::string(model::to_string(l.cp_comm)));
  if (l.cp > 1 && l.cp_comm == model::CpComm::a2a_p2p) {
    a.add("--hierarchical-context-parallel-sizes",
          std::to_string(l.cp_a2a) + " " + std::to_string(l.cp / l.cp_a2a));
  }
  if (l.ep > 1) a.add("--expert-model-parallel-size", l.ep);
  if (m.moe.enabled() && l.tp > 1)
    a.add("--expert-tensor-parallel-size", l.etp);  // Megatron's default would be tp
  if (l.sequence_parallel && l.tp > 1) a.flag("--sequence-parallel");
  a.take(strategy::data_parallel_flavour(l.data_parallel).megatron_args(l));
  if (l.pp > 1 && !megatron_derives_split(l, m.layers)) {
    // The split as a layout string; Megatron-LM takes the virtual stages from it and refuses
    // --num-virtual-stages-per-pipeline-rank beside it.
    const std::vector<int> counts = strategy::chunk_layer_counts(l, m.layers);
    if (l.virtual_stages == 1)
      a.take(strategy::pipeline_schedule_flavour(l.schedule).megatron_args(l));
    a.add("--pipeline-model-parallel-layout",
          "'" + strategy::format_pipeline_layout(counts, m.mtp_depth) + "'");
  } else if (l.pp > 1) {
    a.take(strategy::pipeline_schedule_flavour(l.schedule).megatron_args(l));
    if (l.first_stage_layers > 0)
      a.add("--decoder-first-pipeline-num-layers", l.first_stage_layers);
    if (l.last_stage_layers > 0) a.add("--decoder-last-pipeline-num-layers", l.last_stage_layers);
    if (l.embedding_in_split) a.flag("--account-for-embedding-in-pipeline-split");
    if (l.loss_in_split) a.flag("--account-for-loss-in-pipeline-split");
  }
  if (strategy::order_string(l) != "tp-cp-dp-pp")
    a.note("rank order " + strategy::order_string(l) + ": Megatron-LM orders tp-cp-ep-dp-pp");
}

void precision_arguments(model::Precision p, Arguments& a) {
  switch (p) {
    case model::Precision::mixed_bf16:
    case model::Precision::amp_bf16:
      a.flag("--bf16");
      break;
    case model::Precision::mixed_fp16:
    case model::Precision::amp_fp16:
      a.flag("--fp16");
      break;
    case model::Precision::fp8:
      a.flags({"--bf16", "--fp8-format hybrid"});
      break;
    case model::Precision::fp8_rowwise:
      a.flags({"--bf16", "--fp8-format hybrid"});
      a.note(
          "precision fp8_rowwise: torchao's rowwise scaling; Megatron-LM runs Transformer "
          "Engine's per-tensor FP8 here");
      break;
    case model::Precision::mxfp8:  // Megatron-LM's arguments.py: --fp8-recipe mxfp8 (TE's MXFP8)
      a.flags({"--bf16", "--fp8-format e4m3", "--fp8-recipe mxfp8"});
      break;
    case model::Precision::nvfp4:  // --fp4-format e2m1 --fp4-recipe nvfp4 (TE's NVFP4)
      a.flags({"--bf16", "--fp4-format e2m1", "--fp4-recipe nvfp4"});
      a.note(
          "precision nvfp4: every decoder layer in FP4 as simulated; Megatron-LM's "
          "--num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16 keep some in BF16");
      break;
    case model::Precision::fp32:
      break;
    case model::Precision::tf32:
      a.note("precision tf32: Megatron-LM trains in fp32 (TF32 GEMMs are PyTorch's default)");
      break;
  }
}

void recompute_arguments(model::Recompute r, Arguments& a) {
  switch (r) {
    case model::Recompute::none:
      break;
    case model::Recompute::selective:
      a.flag("--recompute-granularity selective");
      break;
    case model::Recompute::full:
      a.flags({"--recompute-granularity full", "--recompute-method uniform",
               "--recompute-num-layers 1"});
      break;
    case model::Recompute::op_selective:
      a.note(
          "recompute op_selective is TorchTitan's per-op checkpointing; Megatron-LM's nearest is "
          "--recompute-granularity selective");
      a.flag("--recompute-granularity selective");
      break;
  }
}

void training_arguments(const strategy::TrainingSpec& t, Arguments& a) {
  a.add("--micro-batch-size", t.micro_batch);
  a.add("--global-batch-size", t.global_batch);
  precision_arguments(t.precision, a);
  if (t.attention == model::AttentionImpl::eager) a.flag("--attention-backend unfused");
  recompute_arguments(t.recompute, a);
  a.flag("--overlap-grad-reduce");  // gradient buckets reduce during backward, as simulated
  if (t.tp_comm_overlap) a.flag("--tp-comm-overlap");
  if (t.overlap_param_gather) a.flag("--overlap-param-gather");
  if (!t.overlap_p2p_comm) a.flag("--no-overlap-p2p-communication");
  if (t.scatter_gather_tensors_in_pipeline)
    a.note(
        "scatter_gather_tensors_in_pipeline is Megatron-LM before 2023 (its default then); "
        "Megatron-Core has no such flag and sends a stage's boundary tensor whole");
  if (t.grad_reduce_in_bf16) a.flag("--grad-reduce-in-bf16");
  if (t.bf16_optimizer_moments)
    a.flags({"--use-precision-aware-optimizer", "--exp-avg-dtype bf16", "--exp-avg-sq-dtype bf16"});
  if (t.lora.enabled()) {
    std::ostringstream peft;
    peft << "LoRA has no Megatron-LM flag: run it with Megatron-Bridge's finetune and cfg.peft = "
         << "LoRA(dim=" << t.lora.rank << ", alpha=" << t.lora.alpha
         << ", dropout=" << t.lora.dropout << ", target_modules=[";
    const char* comma = "";
    for (const auto& [name, target] : model::lora_target_names()) {
      if (!t.lora.adapts(target)) continue;
      peft << comma << "'" << name << "'";
      comma = ", ";
    }
    peft << "])";
    a.note(peft.str());
  }
}

int nodes_of(const LaunchTarget& t) { return (t.gpus + t.gpus_per_node - 1) / t.gpus_per_node; }

// torchrun sketch: the mesh and the model-parallel wrappers, one comment line each.
void sketch_parallelism(const LaunchTarget& target, std::ostream& o) {
  const strategy::Layout& l = target.layout;
  o << "# Mesh, outermost first: pp " << l.pp << ", dp " << l.dp << ", cp " << l.cp << ", tp "
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
  if (l.cp > 1 && l.cp_comm != model::CpComm::p2p)
    o << "# cp_comm " << model::to_string(l.cp_comm)
      << ": PyTorch's context_parallel runs a ring only; the all-to-all is Transformer Engine's "
         "(Megatron-LM --cp-comm-type)\n";
  if (l.pp > 1) {
    o << "# Pipeline " << l.pp << " stages, schedule " << strategy::to_string(l.schedule)
      << ": torch.distributed.pipelining.Schedule"
      << strategy::pipeline_schedule_flavour(l.schedule).torch_schedule_class()
      << ", n_microbatches=" << target.training.accumulation(l) << "\n";
  }
}

// torchrun sketch: the dtype names of autocast / FSDP's mixed precision for a precision.
const char* torch_dtype(model::Precision p) {
  using model::Precision;
  if (p == Precision::mixed_bf16 || p == Precision::amp_bf16 || p == Precision::fp8 ||
      p == Precision::fp8_rowwise || p == Precision::mxfp8 || p == Precision::nvfp4)
    return "bfloat16";
  if (p == Precision::mixed_fp16 || p == Precision::amp_fp16) return "float16";
  return "float32";
}

void sketch_precision(const strategy::TrainingSpec& t, bool fsdp, std::ostream& o) {
  const std::string dtype = torch_dtype(t.precision);
  if (!fsdp && dtype != "float32")
    o << "autocast = torch.autocast(\"cuda\", dtype=torch." << dtype << ")\n";
  if (t.precision == model::Precision::tf32) o << "torch.backends.cuda.matmul.allow_tf32 = True\n";
  if (t.precision == model::Precision::fp8)
    o << "# fp8: Transformer Engine's "
         "fp8_autocast(fp8_recipe=DelayedScaling(fp8_format=Format.HYBRID))\n";
  if (t.precision == model::Precision::mxfp8)
    o << "# mxfp8: Transformer Engine's fp8_autocast(fp8_recipe=MXFP8BlockScaling())\n";
  if (t.precision == model::Precision::nvfp4)
    o << "# nvfp4: Transformer Engine's fp8_autocast(fp8_recipe=NVFP4BlockScaling())\n";
  if (t.precision == model::Precision::fp8_rowwise)
    o << "# fp8_rowwise: torchao.float8.convert_to_float8_training(model, "
         "config=Float8LinearConfig.from_recipe_name(\"rowwise\"))\n";
}

void sketch_recompute(model::Recompute r, std::ostream& o) {
  if (r == model::Recompute::none) return;
  if (r == model::Recompute::full) {
    o << "# Recompute every block: "
         "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_"
         "checkpointing(model)\n";
    return;
  }
  o << "# Recompute " << model::to_string(r)
    << ": checkpoint the attention core (selective) or every second 16-bit matmul (op_selective;"
       " Float8 matmuls: training.op_sac_scaled_mm)\n";
}

}  // namespace

std::vector<std::string> megatron_arguments(const LaunchTarget& t,
                                            std::vector<std::string>& notes) {
  if (t.model.family == model::Family::mlp)
    throw UserError("an MLP model has no Megatron-LM equivalent (Megatron-LM trains transformers)");
  std::vector<std::string> args;
  Arguments a{args, notes};
  model_arguments(t.model, t.training, a);
  layout_arguments(t.model, t.layout, a);
  training_arguments(t.training, a);
  return args;
}

std::string megatron_launch_script(const LaunchTarget& t) {
  std::vector<std::string> notes;
  const std::vector<std::string> args = megatron_arguments(t, notes);
  const strategy::Layout& l = t.layout;
  std::ostringstream o;
  o << "#!/bin/bash\n# Megatron-LM launch for clustersim scenario '" << t.name
    << "': " << t.model.name << ", " << t.gpus << " GPUs, TP " << l.tp << " x PP " << l.pp
    << " x CP " << l.cp << " x DP " << l.dp << "\n"
    << "# written by clustersim; `clustersim import megatron --file THIS` reads it back.\n"
    << "# Add the data, tokenizer, learning-rate and checkpoint arguments of your run.\n";
  for (const auto& n : notes) o << "# note: " << n << "\n";
  o << "torchrun --nnodes " << nodes_of(t) << " --nproc-per-node " << t.gpus_per_node
    << " pretrain_gpt.py";
  for (const auto& a : args) o << " \\\n    " << a;
  o << "\n";
  return o.str();
}

std::string torchrun_sketch(const LaunchTarget& target) {
  const strategy::Layout& l = target.layout;
  const strategy::TrainingSpec& t = target.training;
  const strategy::DataParallelFlavour& flavour = strategy::data_parallel_flavour(l.data_parallel);
  std::ostringstream o;
  o << "# torchrun / PyTorch configuration sketch for clustersim scenario '" << target.name << "' ("
    << target.model.name << ", " << target.gpus << " GPUs).\n"
    << "# Launch: torchrun --nnodes " << nodes_of(target) << " --nproc-per-node "
    << target.gpus_per_node << " train.py\n"
    << "# A sketch of the settings that decide the step, not a training script: fill in the model "
       "and data.\n"
    << "import torch\nimport torch.distributed as dist\nfrom torch.distributed.device_mesh import "
       "init_device_mesh\n\n"
    << "dist.init_process_group(\"nccl\")\n";
  sketch_parallelism(target, o);
  o << "MICRO_BATCH = " << t.micro_batch << "    # sequences per GPU per micro-batch\n"
    << "GLOBAL_BATCH = " << t.global_batch << "  # sequences per optimizer step ("
    << t.accumulation(l) << " micro-batches per replica)\n"
    << "SEQ_LEN = " << t.seq_len << "\n";
  o << flavour.torchrun_setup(l, torch_dtype(t.precision));
  sketch_precision(t, flavour.fsdp(), o);
  sketch_recompute(t.recompute, o);
  o << "optimizer = torch.optim.AdamW(model.parameters(), fused=True)\n";
  return o.str();
}

}  // namespace cs::interop
