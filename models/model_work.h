// What one micro-batch of a model costs, block by block: the forward and backward ops with their
// shapes, FLOPs and HBM bytes, which parameter gradients each backward op completes, where tensor
// parallelism must all-reduce, and the activation bytes each block saves for backward.
//
// Blocks: for transformers block 0 is the embedding, blocks 1..L the decoder layers and block L+1
// the head (final norm, LM head, loss); for the MLP one block per layer with the loss on the last.
// Per-layer activation memory follows Korthikanti et al. 2022, "Reducing Activation Recomputation
// in Large Transformer Models", generalised to GQA, SwiGLU, dropout-free models and fused
// attention (see activation_bytes_per_layer).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/lora_spec.h"
#include "models/model_spec.h"

namespace cs::model {

// fp8: Transformer Engine's recipe (one scale per tensor: the backward reuses the forward's FP8
// input and weight). fp8_rowwise: torchao's rowwise recipe (a scale per row of each GEMM operand:
// the backward quantizes its operands again along the other axis). mxfp8 and nvfp4: Transformer
// Engine's block-scaled recipes for Blackwell (MXFP8BlockScaling, NVFP4BlockScaling; see
// LinearQuantization).
enum class Precision : uint8_t {
  fp32,
  amp_fp16,
  amp_bf16,
  mixed_fp16,
  mixed_bf16,
  tf32,
  fp8,
  fp8_rowwise,
  mxfp8,
  nvfp4
};
// How a low-precision recipe scales its GEMMs' operands: none (GEMMs in the compute dtype), one
// scale per tensor (fp8), per row (fp8_rowwise), per 32-element block (mxfp8), per 16-element
// block under a per-tensor scale (nvfp4).
enum class Scaling : uint8_t { none, per_tensor, rowwise, mxfp8, nvfp4 };
enum class AttentionImpl : uint8_t { fused, eager };
// Activation checkpointing. selective: Megatron's (the attention core is recomputed); full: the
// whole layer from its input; op_selective: TorchTitan's per-op policy (every second matmul of a
// layer and every non-matmul op recomputed; the other matmuls' and flash attention's outputs kept).
enum class Recompute : uint8_t { none, selective, full, op_selective };
// What op_selective does with a low-precision linear's GEMM (torch._scaled_mm, torchao's
// Float8Linear). saved: TorchTitan since 2026-03-23 (commit 114151ad4) builds its save list from
// PyTorch's compute-intensive ops, _scaled_mm included, so every such GEMM's output is kept.
// recomputed: before that, the list held aten.mm and aten.linear only (parallelize_llama.py
// _save_list), so every _scaled_mm is re-run in backward. 16-bit GEMMs (aten.mm) alternate either
// way.
enum class ScaledMmSaving : uint8_t { saved, recomputed };

std::string_view to_string(Precision p);
std::string_view to_string(AttentionImpl a);
std::string_view to_string(Recompute r);

// Bytes per element of each kind of state under a precision scheme.
//   fp32:        fp32 weights, grads, compute; AdamW m, v (4 + 4 + 8 = 16 B/param)
//   amp_*:       PyTorch autocast: fp32 weights and grads, 16-bit compute, AdamW m, v (16 B/param)
//   mixed_*:     Megatron/DeepSpeed: 16-bit weights and grads, fp32 master + m + v (2 + 2 + 12)
//   tf32:        fp32 everywhere, GEMMs and attention on TF32 tensor cores (PyTorch's
//                allow_tf32 / set_float32_matmul_precision("high")); 16 B/param
//   fp8:         Transformer Engine on top of mixed_bf16: GEMMs in FP8 (E4M3/E5M2, delayed
//                scaling) at the FP8 rate, each GEMM's inputs cast to FP8 first (read 2 B, write
//                1 B per element, amax included), an FP8 copy of the weights (1 B/param) kept
//                for the step; attention and the other ops stay bf16. Not modelled: FP8
//                activations saved for backward (the bf16 figure is kept, an upper bound).
//   mxfp8:       as fp8, GEMMs at the FP8 rate on MXFP8 operands (E4M3, one E8M0 scale per 32
//                elements); Blackwell only. nvfp4: GEMMs at the FP4 rate on NVFP4 operands
//                (E2M1, one E4M3 scale per 16 elements and an fp32 scale per tensor); Blackwell
//                only. Their casts and weight copies: LinearQuantization.
struct PrecisionInfo {
  ir::DType compute;  // non-GEMM ops and attention
  ir::DType gemm;     // linear layers' GEMMs
  int64_t weight_bytes;
  int64_t grad_bytes;
  int64_t optimizer_bytes;   // per parameter (master copy if any + AdamW moments)
  int64_t activation_bytes;  // per activation element
  bool autocast_copies;      // amp keeps 16-bit weight copies alive from forward to backward
  // The low-precision weight copies per parameter, whole bytes (what strategies' memory accounting
  // reads). fp8_rowwise keeps the fp8 figure, though torchao casts weights each step rather than
  // keeping a copy: its cast weights live through forward. mxfp8 and nvfp4 hold fractional bytes
  // (their scales): weight_copy_bytes() is their exact figure, this its whole part.
  int64_t fp8_weight_bytes = 0;
  Scaling scaling = Scaling::none;  // how the GEMMs' operands are scaled (see Precision)
  // Bytes of each AdamW moment (m, v) per parameter: 4 (fp32), or 2 under a precision-aware
  // optimizer with bf16 moments (model::training_precision).
  int64_t moment_bytes = 4;

  // The fp32 master copy's bytes per parameter where the optimizer keeps one apart from the
  // weights (mixed_* and the low-precision recipes: 4), else 0.
  int64_t master_bytes() const { return optimizer_bytes - 2 * moment_bytes; }

  // Bytes of the low-precision weight copies of `numel` parameters, block scales included
  // (weight_copy_bytes_per_param); 0 where GEMMs read the weights themselves.
  int64_t weight_copy_bytes(int64_t numel) const;
};
PrecisionInfo precision_info(Precision p);

// What a linear layer's low-precision GEMMs add around them (input [T, k], weight [k, n], output
// gradient [T, n]): the elements cast to the GEMM dtype in forward and in backward and the HBM
// bytes each cast moves per element (model_work.cpp derives each recipe's figures, with sources).
struct LinearQuantization {
  int64_t forward_elements = 0;
  int64_t backward_elements = 0;
  double bytes_per_element = 0;             // read the 16-bit tensor, write the copies and scales
  std::string_view op_suffix = "fp8_cast";  // the cast ops' names: "<linear>.<suffix>[.bwd]"
  // Backward GEMMs whose scales are applied to their output by a kernel of its own (torchao's
  // rowwise recipe): the dgrad's [T, k] and the wgrad's [n, k] outputs are each read and written
  // once more at 16 bits.
  bool rescales_backward_outputs = false;

  int64_t cast_bytes(int64_t elements) const;
};
LinearQuantization linear_quantization(Scaling s, int64_t tokens, int64_t n, int64_t k);
// The low-precision weight copies a recipe keeps for the step, bytes per parameter with scales.
double weight_copy_bytes_per_param(Scaling s);

// Megatron-Core's --moe-token-dispatcher-type: alltoall sends each token copy to its expert's
// rank; allgather gathers every token of the etp x ep group on every rank, whose local experts
// pick theirs, and reduce-scatters the outputs back.
enum class MoeDispatcher : uint8_t { alltoall, allgather };
std::string_view to_string(MoeDispatcher d);

// How a stack runs context parallelism's load-balanced causal ring attention
// (models/layers/attention_core.cpp says what each step emits):
//   p2p           Transformer Engine (Megatron-Core): K and V at their GQA width passed peer to
//                 peer under each step's kernel, the merge inside the kernel.
//   torch         PyTorch's context_parallel as TorchTitan ran it (torch 2024-12, rotate method
//                 "allgather"): K and V at the query-head width, all-gathered once per pass; the
//                 partial outputs merged by fp32 elementwise ops; K, V gradients passed on in fp32.
//   torch_traced  the same inside a torch.compile graph: a traced collective is waited for where
//                 it is issued, so none of it overlaps the attention kernels.
enum class CpRing : uint8_t { p2p, torch, torch_traced };

// Megatron-Core's --cp-comm-type (Transformer Engine's context-parallel attention), beside the
// ring: p2p, the ring above; a2a, DeepSpeed-Ulysses (all-to-all of Q, K and V from sequence
// shards to head shards before the attention, of its output back after); a2a+p2p, both
// (--hierarchical-context-parallel-sizes): an all-to-all inside groups of `cp_a2a` ranks, the
// ring over the cp / cp_a2a groups. Megatron's allgather (K and V all-gathered) is not modelled.
enum class CpComm : uint8_t { p2p, a2a, a2a_p2p };
std::string_view to_string(CpComm c);

// How a stack overlaps sequence parallelism's all-gathers and reduce-scatters with the GEMMs
// beside them (training.tp_comm_overlap):
//   userbuffers     Transformer Engine's userbuffer overlap (Megatron-Core): every gather before
//                   and reduce-scatter after a dense TP GEMM, pipelined in TP chunks.
//   micro_pipeline  PyTorch's async TP (TorchTitan; torch.compile's micro-pipeline TP pass over
//                   symmetric memory): only the patterns the pass matches
//                   (torch/_inductor/fx_passes/micro_pipeline_tp.py): an all-gather whose output a
//                   matmul reads as its left operand, and a reduce-scatter of one matmul's output.
//                   Each matched reduce-scatter ends with a sum of the TP partial outputs on the
//                   compute stream (torch/distributed/_symmetric_memory, the pipelined
//                   produce-and-all-to-all). Everything else stays a NCCL call on the compute
//                   stream.
enum class TpOverlap : uint8_t { none, userbuffers, micro_pipeline };

struct WorkShape {
  int64_t micro_batch = 1;
  int64_t seq = 1;  // the whole sequence; each context-parallel rank holds seq / cp
  int tp = 1;
  bool sequence_parallel = false;
  TpOverlap tp_overlap = TpOverlap::none;
  Precision precision = Precision::mixed_bf16;
  AttentionImpl attention = AttentionImpl::fused;
  ir::AttentionKernel attention_kernel = ir::AttentionKernel::cudnn;  // fused attention ops' kernel
  Recompute recompute = Recompute::none;
  ScaledMmSaving scaled_mm = ScaledMmSaving::saved;  // op_selective's low-precision GEMMs
  int cp = 1;                    // context parallelism (ring attention, load-balanced causal)
  CpRing cp_ring = CpRing::p2p;  // how the stack runs it (see CpRing)
  // Ranks of the all-to-all level (CpComm): 1, the ring alone; cp, Ulysses alone; between, the
  // all-to-all inside groups of cp_a2a ranks and the ring (p2p only) over cp / cp_a2a of them.
  int cp_a2a = 1;
  // Expert parallelism: routed experts split over `ep` ranks; each rank dispatches its tokens to
  // the experts' ranks and gets them back (all-to-all). Expert tensor parallelism: each expert
  // split over `etp` ranks (1 or tp), which all-gather the tokens they received before the expert
  // GEMMs and reduce-scatter the partial outputs after. Routing (see moe_routed_tokens):
  // `moe_imbalance` (>= 1) is the busiest EP rank's share of token copies over the mean;
  // `moe_capacity_factor` (0: dropless) caps each expert at capacity_factor x its balanced share,
  // dropping the rest, and `moe_pad_to_capacity` pads every expert's input up to that cap.
  int ep = 1;
  int etp = 1;
  double moe_imbalance = 1.0;
  double moe_capacity_factor = 0;
  bool moe_pad_to_capacity = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  // The stack runs each tensor op of an elementwise chain as its own autograd op (PyTorch eager,
  // DeepSpeed over an eager model: StackTraits::fuses_elementwise false): autograd keeps every
  // op's saved inputs, so a chain keeps its intermediates until backward (see
  // unfused_chain_saved_bytes_per_token).
  bool unfused_chains = false;
  // The loss runs as eager kernels (unfused chains, or torch.compile leaving it out:
  // software_stack.h, eager_loss): it holds eager's fp32 intermediates.
  bool eager_loss = false;
  // The stack fuses q/k/v and gate/up into one linear each (Megatron-Core's linear_qkv and
  // linear_fc1), whatever ModelSpec::projections says of the checkpoint.
  bool fused_projections = false;
  // PyTorch autograd runs the backward (eager or compiled, not clustersim's executor): under
  // autocast each weight gradient is cast back to the parameter's fp32 (ToCopyBackward0).
  bool pytorch_autograd = false;
  // The routed experts' GEMMs run in fp32, one kernel per expert (set_stack_flags: PyTorch
  // autocast over fp32 weights, where torch._grouped_mm is not on autocast's cast list).
  bool fp32_experts = false;
  // LoRA fine-tuning (models/layers/lora.h): the base model frozen, adapters beside the targets.
  LoraSpec lora;
};

// The group an op's collective runs over: its tensor-parallel group, its expert-parallel group
// (MoE token dispatch and combine) or its expert-tensor-parallel group (the tokens gathered for,
// and the partial outputs reduce-scattered from, TP-split experts), or the etp x ep ranks that
// share one copy of every expert (the allgather dispatcher's group).
enum class OpGroup : uint8_t {
  tensor_parallel,
  expert_parallel,
  expert_tensor_parallel,
  expert_tensor_and_expert_parallel,
  context_parallel_a2a  // Ulysses' all-to-alls: the cp_a2a ranks of the all-to-all level
};

// A collective that must run right before or after an op, on the compute stream (Megatron runs
// them synchronously). `bytes` follows nccl-tests' "size"; `count` identical calls (the
// vocab-parallel loss makes three small all-reduces).
struct OpCollective {
  ir::CollectiveType type = ir::CollectiveType::all_reduce;
  Bytes bytes;
  int count = 0;
  OpGroup group = OpGroup::tensor_parallel;
};

// Context parallelism's ring attention, step by step. Transformer Engine's ring (CpRing::p2p):
// while a step computes, the KV chunk it holds travels to the ring's next rank (`passes` bytes
// per rank; backward: KV and its gradient); a step after the first waits for the chunk that
// arrived during the step before. PyTorch's (CpRing::torch*): the first step all-gathers every
// rank's KV (`gathers`) and the second waits for it; in backward each step's merge sends the KV
// gradients it accumulated on (`grad_passes`) and the next merge waits for its predecessor's
// (`waits_grad`); `blocking`: the op waits for its own communication at once (traced graphs).
struct RingStep {
  Bytes passes;             // zero on the last step
  bool waits = false;       // needs the chunk received during the previous step (or the gather)
  Bytes gathers;            // all-gather over the CP group issued as this op starts (output size)
  Bytes grad_passes;        // sent to the next rank once this op has finished
  bool waits_grad = false;  // needs the gradient chunk the previous merge's send delivered
  bool blocking = false;    // this op's gathers / grad_passes are waited for where issued
};

struct Op {
  std::string name;  // e.g. "attn.qkv.wgrad"
  ir::ComputeOp op;
  std::vector<int> grads_ready;      // parameter ids whose gradient is complete after this op
  OpCollective tp_before, tp_after;  // tensor parallelism (none when tp = 1), MoE all-to-alls
  RingStep ring = {};                // context parallelism (none when cp = 1)
  // Under TpOverlap::micro_pipeline: whether PyTorch's pass pipelines this op's TP collective
  // with it (false: the collective stays whole, before or after the op), and whether the op's
  // pipelined reduce-scatter ends with the partials' sum on the compute stream.
  bool tp_pipelinable = true;
  bool tp_sums_partials = false;
  // Kernels the op is when its chain is not fused (PyTorch eager runs each tensor op of e.g.
  // dropout + add, or GPT-2's tanh GELU, as its own kernel); see software_stack.h.
  uint16_t unfused_kernels = 1;
  // Under autocast the unfused chain computes in fp32 (it holds an op on autocast's fp32 list,
  // e.g. pow, and type promotion carries fp32 through the rest): its kernels move 4-byte elements.
  bool unfused_in_fp32 = false;
  // The unfused chain's element accesses as a multiple of the fused op's, where they were counted
  // op by op (0: each of the unfused_kernels moves what the fused op moves).
  double unfused_traffic = 0;
};

struct Block {
  std::string name;  // "embed", "L12", "head"
  std::vector<Op> forward;
  std::vector<Op> recompute;  // forward ops re-run before backward (checkpointing)
  std::vector<Op> backward;   // in execution order
  std::vector<int> params;    // parameter ids owned by this block
  Bytes saved_activations;    // kept from forward to backward (per TP rank)
  Bytes recompute_transient;  // re-materialised in backward when checkpointing dropped it
  Bytes weight_grad_inputs;   // of saved_activations and recompute_transient, what the
                              // weight gradients still read (the linear layers' inputs);
                              // zero-bubble's W frees these
  Bytes autocast_weights;     // amp: 16-bit weight copies held until backward
  Bytes logits;               // head only: logits and fp32 loss intermediates
};

struct ModelWork {
  std::vector<ParameterTensor> params;
  std::vector<Block> blocks;
  Flops model_flops;  // forward + backward of one micro-batch, whole model (all TP ranks)
};

// Token copies one MoE layer's routed experts process on the critical (busiest) EP rank per
// micro-batch, before the expert-tensor-parallel all-gather. A rank routes its `tokens` (its
// sequence shard under SP) to top_k experts: balanced, every rank sends and receives
// R = tokens x top_k. Dropless: the busiest receives ceil(imbalance x R). With a capacity factor
// cf, each source rank sends an expert at most C = ceil(cf x tokens x top_k / experts) copies
// (Megatron computes the capacity from the rank's own tokens), so a rank receives at most
// experts x C: min(ceil(imbalance x R), experts x C) when dropping, exactly experts x C when
// padded to capacity (Megatron's --moe-pad-expert-input-to-capacity).
int64_t moe_routed_tokens(const ModelSpec& m, const WorkShape& w, int64_t tokens);
// Builds one micro-batch's work on one TP rank, layers by spec (models/layers/transformer_layer.h).
ModelWork build_model_work(const ModelSpec& m, const WorkShape& shape);
// What decoder layer `layer`'s weight gradients read, per micro-batch and rank: zero-bubble's W
// pass keeps it after B frees the rest (Block::weight_grad_inputs). Each linear's input, a tensor
// read by several counted once: attention's qkv input (h, SP-sharded) and projection input
// (q_hidden / t), or MLA's (tp 1) norm output, q and kv latents and projection input (heads x
// v_head_dim); the MLP's fc1 input (h, SP-sharded) and fc2 input (ffn / t), or an MoE layer's
// (tp 1) router and shared-expert input (h), the routed token copies its local experts read (h
// for fc1, expert_ffn_hidden for fc2) and the shared fc2's input. The MLP family: its linear's
// input (b h). At most what the layer saves without recomputation: under checkpointing B
// re-materialises the inputs it dropped, and W keeps them (Block::recompute_transient).
Bytes weight_grad_input_bytes_of_layer(const ModelSpec& m, const WorkShape& w, int layer);

// Activation bytes one decoder layer saves for backward, per tensor-parallel rank (and per
// context-parallel rank: its seq / cp tokens). activation_bytes_per_layer is a dense layer's;
// activation_bytes_of_layer is layer `layer`'s (an MoE layer's differs).
// With GPT-2 dims, fp16, dropout, eager attention, t = 1 this is s*b*h*(34 + 5*a*s/h).
Bytes activation_bytes_per_layer(const ModelSpec& m, const WorkShape& shape);
// What a dense decoder layer saves beyond the fused figure, per token on one TP rank, when the
// stack does not fuse its chains (shape.unfused_chains); zero when it does, or when the layer's
// chains are recomputed (full or op_selective checkpointing). Included in the two above.
int64_t unfused_chain_saved_bytes_per_token(const ModelSpec& m, const WorkShape& shape);
Bytes activation_bytes_of_layer(const ModelSpec& m, const WorkShape& shape, int layer);

// Builds ops with consistent FLOPs and HBM bytes, for the model's blocks and for anything else
// that must price an op the way the model does (calibration benchmarks).
struct OpFactory {
  ir::DType dt;
  int64_t ab;                                       // bytes per activation element
  std::optional<ir::DType> gemm_dt = std::nullopt;  // GEMMs' datatype when it differs (fp8, fp4)
  ir::AttentionKernel attention_kernel = ir::AttentionKernel::cudnn;  // marks attention()'s ops
  Scaling scaling = Scaling::none;  // how low-precision GEMMs scale their operands
  // A linear layer's bias gradient is its own reduction kernel (PyTorch eager: addmm's backward
  // sums the output gradient over the tokens), not fused into the wgrad GEMM.
  bool bias_grad_kernels = false;

  // m x k times k x n, `batch` times: 2 m n k FLOPs each; reads both inputs, writes the output.
  ir::ComputeOp gemm(int64_t m, int64_t n, int64_t k, int64_t batch = 1) const;
  ir::ComputeOp memory_bound(ir::OpClass cls, int64_t bytes, double flops = 0) const;
  // Fused causal attention over batch = b * heads: forward 4*b*a*s^2*d FLOPs halved by the causal
  // mask; backward is 2.5x forward (five matmuls against two): `factor` 1 or 2.5.
  ir::ComputeOp attention(int64_t batch_heads, int64_t s, int64_t d, double factor) const;
};

// AdamW step over `params` parameters under a precision scheme (one fused/foreach kernel pass).
ir::ComputeOp optimizer_op(int64_t params, const PrecisionInfo& p);

}  // namespace cs::model
