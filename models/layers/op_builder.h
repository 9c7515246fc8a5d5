// What every submodule of models/layers/ builds its ops with: one build's shared facts
// (LayerContext: the model, the shape, the tokens this rank holds, the op factory, tensor
// parallelism's collectives, the parameter ids by name), the block's op lists under construction
// (BlockOps) and the linear layer, which every submodule has.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/model_work.h"

namespace cs::model::layers {

// Kernels an op's chain runs as when a stack does not fuse it (PyTorch eager), forward and
// backward; each submodule's file counts its own chains.
struct ChainKernels {
  uint16_t forward, backward;
  bool autocast_fp32 = false;  // holds an op autocast runs in fp32 (pow): the chain runs in fp32
};
inline constexpr ChainKernels kOneKernel{1, 1};

// Tensor parallelism of one TP rank: which collectives the Megatron layers need and their size.
// `full` is one [s, b, h] activation at 16 bits (the unsplit hidden state all TP ranks exchange);
// `gathered`, where set, what a sequence-parallel all-gather moves instead (Float8 tensor
// parallelism gathers the FP8 cast: see tp_gathers_in_fp8).
struct TpContext {
  int t = 1;
  bool sp = false;
  Bytes full;
  Bytes gathered{};
  TpOverlap overlap = TpOverlap::none;
  // A column-parallel input gathered at 16 bits and cast before its GEMM (torchao's rowwise
  // Float8 under plain TP): under micro_pipeline the casts, not a matmul, read the gather.
  bool gather_feeds_casts = false;
  OpCollective make(ir::CollectiveType type, Bytes bytes) const {
    return t > 1 ? OpCollective{type, bytes, 1} : OpCollective{};
  }
  OpCollective make(ir::CollectiveType type) const { return make(type, full); }
  // Sequence parallelism replaces an all-reduce by a reduce-scatter (leaving the output sharded on
  // the sequence) and needs an all-gather before a column-parallel layer (its input is sharded).
  OpCollective reduce() const {
    return make(sp ? ir::CollectiveType::reduce_scatter : ir::CollectiveType::all_reduce);
  }
  // A column-parallel layer's input gather (`gathered` bytes where set).
  OpCollective gather_if_sp() const {
    return sp ? make(ir::CollectiveType::all_gather, gathered.count > 0 ? gathered : full)
              : OpCollective{};
  }
  // A row-parallel layer's output-gradient gather in backward: 16-bit.
  OpCollective gradient_gather_if_sp() const {
    return sp ? make(ir::CollectiveType::all_gather) : OpCollective{};
  }
};

// A model's parameter ids by name (parameter_list's names).
class ParamIds {
 public:
  explicit ParamIds(const std::vector<ParameterTensor>& params);
  // The ids of those of `names` the model has, in that order.
  std::vector<int> operator()(std::initializer_list<std::string> names) const;
  bool has(const std::string& name) const { return id_.count(name) > 0; }
  // prefix + "0" + suffix .. prefix + (count - 1) + suffix, those the model has.
  std::vector<int> numbered(const std::string& prefix, const std::string& suffix, int count) const;
  // False when one of `ids` is frozen (LoRA: ParameterTensor::trainable).
  bool trainable(const std::vector<int>& ids) const;

 private:
  std::unordered_map<std::string, int> id_;
  std::vector<bool> trainable_;  // by id
};

// One build's shared facts, for one tensor-parallel (and context-parallel) rank.
struct LayerContext {
  LayerContext(const ModelSpec& model, const WorkShape& shape,
               const std::vector<ParameterTensor>& params);
  const ModelSpec& m;
  const WorkShape& w;
  PrecisionInfo p;
  OpFactory f;
  int64_t ab;    // bytes per activation element
  int t;         // tensor-parallel size
  int64_t s;     // the rank's tokens of each sequence (seq / cp)
  int64_t T;     // the rank's tokens of the micro-batch (s x micro_batch)
  int64_t T_sp;  // tokens of the non-TP regions on this rank (T / t under SP)
  int64_t h;     // hidden size
  TpContext tp;
  ParamIds ids;
  // How the stack runs the q/k/v and gate/up projections: Megatron-Core fuses each group into one
  // linear (linear_qkv, linear_fc1) whatever the checkpoint's layout; PyTorch runs the model's own.
  Projections projections() const {
    return w.fused_projections ? Projections::fused : m.projection_code();
  }
  // False when one of `ids` is frozen (LoRA): its op computes no weight gradient.
  bool trains(const std::vector<int>& param_ids) const { return ids.trainable(param_ids); }
};

// The ops of a block as its submodules append them: forward in execution order, and each
// submodule's backward ops also in forward order (dgrad before wgrad), so that reversing the
// list (backward_in_execution_order) gives the order backward runs them in.
struct BlockOps {
  std::vector<Op> forward;
  std::vector<Op> reversed_backward;
  // Weight and bias tensors the block's linear layers read: autocast casts each with a kernel of
  // its own (finish_block's weights.cast), and autograd casts each one's gradient back.
  int linear_tensors = 0;
  void add(Op fwd, Op bwd) {
    forward.push_back(std::move(fwd));
    reversed_backward.push_back(std::move(bwd));
  }
  // A chain's forward and backward op, with the kernels each runs as unfused (and whether those
  // move fp32 elements under autocast).
  void add_chain(Op fwd, Op bwd, ChainKernels kernels, bool in_fp32 = false);
  // Ops `run` in backward's execution order, appended so that they run in that order.
  void add_backward_in_order(std::vector<Op> run);
  std::vector<Op> backward_in_execution_order() &&;
};

// An op with no parameter gradients and no collectives.
inline Op named(std::string name, ir::ComputeOp op, std::vector<int> grads_ready = {}) {
  return Op{std::move(name), op, std::move(grads_ready), {}, {}};
}

enum class Split : uint8_t { none, column, row };

// A linear layer y[T, n] = x[T, k] W[k, n]: forward GEMM; backward dgrad (dx = dy W^T) and wgrad
// (dW = x^T dy), each with the forward's 2*T*n*k FLOPs, so backward = 2x forward.
// Megatron: a column-parallel layer all-reduces its input gradient in backward (SP: all-gathers
// its input in forward and again for wgrad, reduce-scatters the input gradient); a row-parallel
// layer all-reduces its output in forward (SP: reduce-scatters it, all-gathers its gradient).
// A frozen layer (`trainable` false: LoRA's base model) runs no wgrad, nor the gathers only wgrad
// needs; its dgrad still runs, the input gradient earlier layers need.
// `gemms`: the linear layers the model's code runs for it (ModelSpec::Projections: Hugging Face's
// Llama computes the fused qkv width as q_proj, k_proj and v_proj): the same FLOPs, as that many
// kernels each way where a stack launches them one by one (PyTorch eager).
void linear(const OpFactory& f, BlockOps& ops, const std::string& name, int64_t tokens, int64_t n,
            int64_t k, std::vector<int> params, Split split, const TpContext& tp, bool bias = false,
            bool trainable = true, uint16_t gemms = 1);

// Autocast over fp32 parameters in eager PyTorch: a linear layer whose input is fp32 (a norm's
// output, as the residual stream is fp32 under autocast; GPT-2's tanh GELU) casts it to 16 bits
// itself, each of the `readers` layers its own copy (autocast caches the casts of weights, not of
// activations); backward casts each copy's gradient back to fp32 (ToCopyBackward) and sums the
// readers' gradients. `elements`: the input's. Nothing under other precisions or a fusing stack.
void autocast_input_casts(const LayerContext& c, BlockOps& ops, const std::string& name,
                          int64_t elements, int readers);

// The sum of the input gradients of separate projections reading one input (q/k/v, gate/up):
// autograd adds the readers' dgrads, [T, h] each, before the input's gradient flows on. A fusing
// stack adds them in one kernel (read each, write the sum; in fp32 under autocast, where the input
// is fp32); eager in readers - 1 adds of two. Counted by autocast_input_casts where that runs
// (eager under autocast). `elements`: the input's, as the dgrads write it (before any
// reduce-scatter).
void input_gradient_sum(const LayerContext& c, BlockOps& ops, const std::string& name,
                        int64_t elements, int readers);

// Eager PyTorch's backward of a fused projection's split into parts (ModelSpec::Projections), over
// its output gradient [tokens, width], appended to run before the projection's dgrad: a split or
// chunk's gradient is one cat (read the parts, write the whole: 2 width elements a token);
// `slices` parts cut by slicing are each a slice_backward (a zero-filled full-width tensor and a
// copy of the part) and are then summed (slices - 1 full-width adds): 3 + 2 + 6 = 11 width
// elements a token for three. Nothing under a fusing stack.
void split_backward(const LayerContext& c, BlockOps& ops, const std::string& name, int64_t tokens,
                    int64_t width, int slices);

}  // namespace cs::model::layers
