// A parallel layout TP x CP x DP x PP with a data-parallel flavour, expert parallelism on
// Megatron-Core's expert grid (EP x ETP over each stage's TP x CP x DP ranks, below), and the
// training set-up it runs.
//
// Placement: by default ranks are placed the way Megatron-LM does, tensor-parallel ranks
// innermost (consecutive GPUs, so inside a node), then context-parallel, then data-parallel, then
// pipeline stages:
//   rank = ((pp_index * dp + dp_index) * cp + cp_index) * tp + tp_index    (order "tp-cp-dp-pp")
// `order` lists the dimensions innermost first and may be any permutation.
//
// Experts follow Megatron-Core's expert grid ("MoE parallel folding", parallel_state.py): each
// pipeline stage's tp x cp x dp ranks, numbered by their place in the dense grid (pp left out),
// are re-split as etp x ep x edp, etp innermost:
//   local = (dp_index * cp + cp_index) * tp + tp_index    (order "tp-cp-dp-pp")
//   etp_index = local % etp,  ep_index = local / etp % ep,  edp_index = local / (etp ep)
// so edp = tp cp dp / (etp ep) ranks hold the same expert shard and reduce its gradients. etp is
// 1 (whole experts; with tp > 1 the EP group folds over tensor-parallel ranks) or tp (experts
// split like the dense MLP, over the TP group itself under the default order). With tp = cp = 1
// the EP group is `ep` consecutive data-parallel ranks, as before the expert grid existed.
#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "models/model_spec.h"
#include "models/model_work.h"
#include "models/software_stack.h"
#include "strategies/pipeline_layout.h"

namespace cs::strategy {

enum class DataParallel : uint8_t {
  ddp,                 // PyTorch DDP, bucketed gradient all-reduce overlapped with backward
  ddp_flat,            // one asynchronous all-reduce per parameter as its gradient is ready
  zero1,               // sharded optimizer state: bucketed reduce-scatter, sharded step, all-gather
  zero2,               // ZeRO-1 plus sharded gradients (reduce-scatter every micro-batch)
  fsdp_shard_grad_op,  // FSDP SHARD_GRAD_OP: per-block units, params gathered once per step
  fsdp_full_shard,     // FSDP FULL_SHARD = ZeRO-3: gather before forward and before backward
};
std::string_view to_string(DataParallel d);
bool is_fsdp(DataParallel d);
// Stage of the ZeRO paper the flavour shards to (0: nothing sharded, 3: parameters too).
int zero_stage(DataParallel d);

// zb_h1: Qi et al. 2024, "Zero Bubble Pipeline Parallelism", schedule ZB-H1: 1F1B with each
// backward split into B (input gradient, on the critical path) and W (weight gradient), the W
// passes deferred into the cool-down where 1F1B idles, at most s of them on stage s, so no
// stage holds more than the first stage's 1F1B peak.
enum class PipelineSchedule : uint8_t { gpipe, one_f_one_b, interleaved, zb_h1 };
std::string_view to_string(PipelineSchedule s);

enum class Dim : uint8_t { tp, cp, dp, pp };

struct Layout {
  int tp = 1, pp = 1, dp = 1;
  int cp = 1;  // context parallelism: the sequence split over cp ranks
  // How (model::CpComm, Megatron-Core's --cp-comm-type) and, for a2a+p2p, the all-to-all
  // level's ranks (--hierarchical-context-parallel-sizes' first; work_shape.h cp_a2a_size).
  model::CpComm cp_comm = model::CpComm::p2p;
  int cp_a2a = 0;
  int ep = 1;  // expert parallelism: MoE experts split over ep ranks
  // Expert tensor parallelism (Megatron-Core --expert-tensor-parallel-size): 1 or tp. Megatron
  // defaults it to tp when unset; ours is 1, what published MoE recipes set (Mixtral, Qwen3-MoE,
  // DeepSeek-V3 runs with --expert-tensor-parallel-size 1) and what every layout meant before
  // the key existed.
  int etp = 1;
  DataParallel data_parallel = DataParallel::ddp;
  // PyTorch DDP's bucket_cap_mb default is 25 (MiB); its first bucket is capped at 1 MiB
  // (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES).
  Bytes bucket_size = 25_MiB;
  Bytes first_bucket_size = 1_MiB;
  bool sequence_parallel = false;  // Megatron SP (needs tp > 1)
  // PyTorch FSDP's generation (fsdp_* only): 1, flat parameters (FullyShardedDataParallel);
  // 2, per-parameter sharding (fully_shard, TorchTitan), which copies each unit's parameters in
  // and out of the all-gather buffer and its gradients into the reduce-scatter buffer.
  int fsdp_version = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;  // model chunks per stage (interleaved schedule)
  // Uneven pipelines (Megatron's --decoder-first/last-pipeline-num-layers): decoder layers of the
  // first and last stage; 0 means an even share. The other stages split the rest evenly.
  int first_stage_layers = 0, last_stage_layers = 0;
  // Megatron-Core's --account-for-embedding-in-pipeline-split and
  // --account-for-loss-in-pipeline-split (get_num_layers_to_build, transformer_block.py): the
  // embedding and the loss each count as one layer when the layers are split, so every model
  // chunk gets (layers + 2) / (pp x virtual_stages) and the first chunk and the last one decoder
  // layer fewer (chunk_layer_counts). Megatron-Bridge's Llama 3.1 405B and Qwen3-235B recipes set
  // both: 126 + 2 = 128 over pp 8 x vp 8 is 2 layers a chunk, 1 on the first and the last.
  bool embedding_in_split = false, loss_in_split = false;
  // Megatron-Core's --pipeline-model-parallel-layout (pipeline_layout.h): the decoder layers of
  // each model chunk, pp x virtual_stages of them, given outright; empty, the split is computed as
  // above. Megatron-Bridge places DeepSeek-V3's 61 layers so ("Et*4|(t*4|)*14tmL" on pp 4 x vp 4).
  PipelineLayerLayout pipeline_layout;
  bool explicit_split() const { return !pipeline_layout.decoder_layers.empty(); }
  std::array<Dim, 4> order{Dim::tp, Dim::cp, Dim::dp, Dim::pp};  // innermost first
  int gpus() const { return tp * cp * pp * dp; }
};

// Where a rank sits in the layout.
struct Coord {
  int tp = 0, pp = 0, dp = 0, cp = 0;
};
Coord coord_of(const Layout& l, int rank);
int rank_of(const Layout& l, Coord c);
// The ranks that differ from `at` only along `d` (its tensor-, context-, data- or
// pipeline-parallel group), in index order.
std::vector<uint32_t> ranks_along(const Layout& l, Coord at, Dim d);
// The ranks that differ from `at` only along the dimensions `dims` (e.g. the gradient group of a
// context-parallel layout: dp x cp), in rank order.
std::vector<uint32_t> ranks_along(const Layout& l, Coord at, std::initializer_list<Dim> dims);
// The expert grid (see the top): the ep ranks that split `at`'s MoE layers' experts (the token
// all-to-all's group), the etp ranks that split each of its experts (the all-gather and
// reduce-scatter around the expert GEMMs), and the tp cp dp / (etp ep) ranks holding the same
// expert shard (the expert gradients' group); each in rank order.
std::vector<uint32_t> expert_parallel_group(const Layout& l, Coord at);
std::vector<uint32_t> expert_tensor_parallel_group(const Layout& l, Coord at);
std::vector<uint32_t> expert_data_parallel_group(const Layout& l, Coord at);
// The etp x ep ranks that together hold one copy of every expert (Megatron's tp_ep group: the
// allgather dispatcher's).
std::vector<uint32_t> expert_tensor_and_expert_parallel_group(const Layout& l, Coord at);
// Ranks holding one routed expert shard: tp x cp x dp / (etp x ep).
int expert_data_parallel_size(const Layout& l);
// Elements of `p` one rank holds: routed experts split by etp, other TP-split tensors by tp.
int64_t numel_per_rank(const model::ParameterTensor& p, const Layout& l);
// Decoder layers of each pipeline stage, first to last (uneven when first/last_stage_layers set,
// or with the embedding or the loss counted in the split or an explicit pipeline_layout: the sums
// of the stage's chunks).
std::vector<int> stage_layer_counts(const Layout& l, int layers);
// Decoder layers of each model chunk in global chunk order (chunk g runs on stage g % pp): an
// explicit pipeline_layout's own; with the embedding or the loss counted in the split,
// Megatron-Core's (layers + counted) / chunks each, the first chunk (embedding) and the last (loss)
// one fewer; else the stages' counts when virtual_stages is 1; with the interleaved schedule an
// even split, or where the layers do not divide, TorchTitan's default (generate_split_points): the
// first chunk gets layers / chunks, the next (layers % chunks) chunks one more, the last what
// remains.
std::vector<int> chunk_layer_counts(const Layout& l, int layers);
std::string order_string(const Layout& l);  // e.g. "tp-cp-dp-pp"
// "" for an even split; else e.g. "layers per stage 7, 8 x 14, 7 (default split: 126 layers do
// not divide by pp 16)" for the report ("layers per model chunk ..." when interleaved).
std::string stage_split_string(const Layout& l, int layers);

// How MoE layers route their tokens (the scenario's `moe:` section; model::moe_routed_tokens).
struct MoeRouting {
  // 0: dropless (Megatron-Core's default, --moe-expert-capacity-factor unset); else each expert
  // takes at most capacity_factor x its balanced share of a rank's token copies, in (0, 16].
  double capacity_factor = 0;
  // --moe-pad-expert-input-to-capacity: every expert's input padded to its capacity (needs one).
  bool pad_to_capacity = false;
  // The busiest EP rank's token copies over the mean, in [1, ep]; 1: balanced routing.
  double imbalance = 1.0;
  // Megatron-Core's --moe-token-dispatcher-type (its default is allgather; ours alltoall, what
  // the expert-parallel recipes set and what the simulator always did).
  model::MoeDispatcher dispatcher = model::MoeDispatcher::alltoall;
};

struct TrainingSpec {
  int64_t global_batch = 1;  // sequences per optimizer step
  int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel replica
  int64_t seq_len = 1;
  model::Precision precision = model::Precision::mixed_bf16;
  model::AttentionImpl attention = model::AttentionImpl::fused;
  // The fused attention kernel (`training.attention_backend`): cuDNN's flash attention (PyTorch
  // SDPA's default on Hopper from 2.11, Transformer Engine) or FlashAttention-2 (SDPA's default
  // before 2.11, pytorch/pytorch#138522). Carried to the attention ops (ir::ComputeOp).
  ir::AttentionKernel attention_kernel = ir::AttentionKernel::cudnn;
  model::Recompute recompute = model::Recompute::none;
  // `training.op_sac_scaled_mm` (model::ScaledMmSaving): op_selective's low-precision GEMMs.
  model::ScaledMmSaving scaled_mm = model::ScaledMmSaving::saved;
  MoeRouting moe;
  // Overlap as structure (Megatron-Core's flags): the TP/SP all-gather and reduce-scatter split
  // into tp chunks pipelined with the GEMM that consumes or produces them (--tp-comm-overlap,
  // needs sequence parallelism); ZeRO-1/2's parameter all-gather issued at the step's start so
  // the forward of each bucket's layers waits only for its own bucket (--overlap-param-gather).
  // Gradient reduction always overlaps backward (DDP buckets, --overlap-grad-reduce).
  bool tp_comm_overlap = false;
  bool overlap_param_gather = false;
  // Megatron's pipeline exchanges (`training.overlap_p2p_comm`, --[no-]overlap-p2p-communication):
  // false, the interleaved schedule's batched sends and receives block the stage
  // (pipeline_p2p_blocks; Megatron-LM before 2023 had no other form). 1F1B's block whatever it
  // says.
  bool overlap_p2p_comm = true;
  // Megatron-LM before 2023 (`training.scatter_gather_tensors_in_pipeline`, its default from
  // 2021-02 until Megatron-Core dropped it in 2023-01): without sequence parallelism, each tensor-
  // parallel rank sends its 1/tp slice of a stage's boundary tensor and the receiver all-gathers
  // the slices over its tensor-parallel group (megatron/p2p_communication.py _communicate).
  bool scatter_gather_tensors_in_pipeline = false;
  // The software stack the run trains with (models/software_stack.h): fusion, host cost per
  // kernel, optimizer implementation. `ideal` is clustersim's own executor.
  model::Stack stack = model::Stack::ideal;
  // What torch.compile compiled (`training.compile_scope`, stack torch_compile only).
  model::CompileScope compile_scope = model::CompileScope::model;
  // The optimizer kernel (`training.optimizer_impl`): unset, the stack's own default; set where
  // a run departs from it (a TorchTitan or Llama recipe passing fused=True to eager AdamW).
  std::optional<model::OptimizerImpl> optimizer_impl;
  model::OptimizerImpl optimizer() const {
    return optimizer_impl.value_or(model::stack_traits(stack).optimizer);
  }
  // The host's time to issue one kernel (`training.host_per_kernel`): unset, the stack's own (30 us
  // for eager PyTorch, fitted on our own Hugging Face steps: models/software_stack.cpp). Hosts
  // and model code differ: seed 002's leaner GPT-2 ran at about 20 us.
  std::optional<SimTime> host_per_kernel;
  SimTime host_time_per_kernel() const {
    return host_per_kernel.value_or(model::stack_traits(stack).host_per_kernel);
  }
  // Megatron-Core's --grad-reduce-in-bf16 (`training.grad_reduce_in_bf16`): its gradient buffer
  // and data-parallel reduction in bf16 rather than fp32 (model::gradient_bytes).
  bool grad_reduce_in_bf16 = false;
  // AdamW's moments in bf16 (`training.optimizer_moments: bf16`): Megatron-Core's
  // --use-precision-aware-optimizer with --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16, as
  // Megatron-Bridge's DeepSeek-V3 recipes set it (model::training_precision).
  bool bf16_optimizer_moments = false;
  // LoRA fine-tuning (`training.lora`, models/lora_spec.h): the base model frozen, adapters train.
  model::LoraSpec lora;
  // The precision's bytes as this run's stack keeps them (gradients: model::gradient_bytes).
  model::PrecisionInfo precision_info() const {
    return model::training_precision(precision, stack, grad_reduce_in_bf16, bf16_optimizer_moments);
  }
  // Gradient accumulation steps (pipeline micro-batches) = global_batch / (micro_batch * dp).
  int64_t accumulation(const Layout& l) const { return global_batch / (micro_batch * l.dp); }
};

// Which overlap a layout admits (tp_comm_overlap needs tensor and sequence parallelism,
// overlap_param_gather a sharded optimizer: zero1/zero2), and of that what a software stack
// turns on by default.
struct OverlapDefaults {
  bool tp_comm_overlap = false;
  bool overlap_param_gather = false;
};
OverlapDefaults admitted_overlap(const Layout& l);
OverlapDefaults stack_overlap_defaults(const Layout& l, model::Stack stack);
// Whether a pipeline stage's sends and receives block its compute: each exchange with a neighbour
// posted after the stage's last compute, and the next compute waiting until the exchange (its sends
// too) has completed. Megatron-LM batches an exchange's sends and receives and waits for all of
// them (then torch.cuda.synchronize: batch_p2p_sync), except in the interleaved schedule with
// overlap_p2p_comm, its default there since it became --no-overlap-p2p-communication
// (megatron/training/arguments.py forces it off for the non-interleaved schedule); Megatron-LM of
// 2021-2022 always blocked (megatron/p2p_communication.py _communicate). DeepSpeed's pipeline
// engine sends and receives blocking. Other stacks (torch.distributed.pipelining) post them ahead,
// as do GPipe and ZB-H1, which no framework we model runs blocking. Which passes share an
// exchange: PipelineScheduleFlavour::passes_per_exchange.
bool pipeline_p2p_blocks(const Layout& l, const TrainingSpec& t);
// Whether a stage boundary's tensor crosses as tp slices, all-gathered over the receiver's
// tensor-parallel group: Megatron-LM before 2023 without sequence parallelism
// (TrainingSpec::scatter_gather_tensors_in_pipeline), and DeepSpeed's pipeline engine whenever
// tp > 1 (its PartitionedTensor sends, pipeline.pipe_partitioned and grad_partitioned, default
// true: deepspeed/runtime/pipe/engine.py).
bool pipeline_scatter_gather(const Layout& l, const TrainingSpec& t);
// A stage boundary's [s, b, h] tensor per TP rank (its sequence shard under SP), and what one
// exchange carries on the wire: that, or its 1/tp slice where pipeline_scatter_gather.
Bytes pipeline_boundary_tensor_bytes(const model::ModelSpec& m, const Layout& l,
                                     const TrainingSpec& t);
Bytes pipeline_exchange_bytes(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t);
// The gradient bucket a stack's framework uses unless told otherwise: DeepSpeed's
// reduce_bucket_size, 5e8 elements of the gradient dtype (deepspeed/runtime/zero/config.py);
// PyTorch DDP's 25 MiB (Layout's default) for the others.
Bytes stack_bucket_default(model::Stack stack, model::Precision precision);

// Throws UserError when the layout does not divide the GPUs, the batch or the model, naming
// what would be valid.
void validate(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m, int gpus);

}  // namespace cs::strategy
