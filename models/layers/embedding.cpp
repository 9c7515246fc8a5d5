#include "models/layers/embedding.h"

namespace cs::model::layers {

namespace {

// Hugging Face's loss (ForCausalLMLoss) unfused: logits.float(), the labels padded (a fill and a
// copy) and shifted (a copy), log_softmax, nll_loss: 6; backward the loss's seed (ones_like),
// nll_loss's gradient (a fill and the scatter), log_softmax's and the cast back: 5. Counted on the
// GPT-2 small batch-4 Kineto trace (validate/measurements/torch_h100_202611). Their HBM traffic is
// log_softmax's and nll's each way, twice the fused op's (kCrossEntropyTraffic): the label ops
// touch tokens, not logits.
constexpr ChainKernels kCrossEntropyKernels{6, 5};
constexpr double kCrossEntropyTraffic = 2;
// An embedding's backward in eager PyTorch (embedding_dense_backward: the indices sorted, runs
// found, the rows summed, and the dense gradient zeroed): 16 kernels a table, counted on the same
// trace (33 for GPT-2's token and position tables).
constexpr uint16_t kEmbeddingBackwardKernels = 16;

}  // namespace

// Gather rows (plus learned positions); backward scatters into a dense V x h gradient.
// Vocab-parallel embedding: each TP rank looks up its vocabulary slice, then the partial results
// are summed (all-reduce; SP: reduce-scatter, whose backward is an all-gather).
void embedding(const LayerContext& c, BlockOps& ops) {
  const int64_t h = c.h, ab = c.ab, grad = c.p.grad_bytes;
  const int64_t pos = c.m.learned_positions() ? 1 : 0;
  const int64_t vocab_local = c.m.vocab / c.t;
  Op lookup{"embed",
            c.f.memory_bound(ir::OpClass::embedding, c.T_sp * h * ab * (2 + pos)),
            {},
            {},
            c.tp.reduce()};
  const std::vector<int> tables = c.ids({"wte", "wpe"});
  if (!c.trains(tables)) {  // frozen (LoRA): no gradient to scatter, nothing before it to feed
    ops.forward.push_back(std::move(lookup));
    return;
  }
  const auto backward_kernels = static_cast<uint16_t>(kEmbeddingBackwardKernels * (1 + pos));
  ops.add_chain(
      std::move(lookup),
      {"embed.bwd",
       c.f.memory_bound(ir::OpClass::embedding, vocab_local * h * grad + c.T * h * (ab + 2 * grad)),
       tables,
       c.tp.gather_if_sp(),
       {}},
      {1, backward_kernels});
}

// The output head stays in 16 bits under FP8 training in every stack we model: Megatron-Core's
// output_layer is its own ColumnParallelLinear, outside Transformer Engine's fp8_autocast;
// TorchTitan's Float8 conversion skips the module named "output" (float8.filter_fqns); and
// DeepSeek-V3's FP8 recipe keeps "the output head" in its original precision (arXiv
// 2412.19437, sec. 3.3.1).
void lm_head(const LayerContext& c, BlockOps& ops, const std::string& name,
             std::vector<int> params) {
  OpFactory head = c.f;
  head.gemm_dt = std::nullopt;
  // A tied head's weight is the embedding's.
  const bool trains = c.trains(c.m.tied_embeddings() ? c.ids({"wte"}) : params);
  autocast_input_casts(c, ops, name + ".input_cast", c.T * c.h, 1);  // the final norm's fp32 output
  linear(head, ops, name, c.T, c.m.vocab / c.t, c.h, std::move(params), Split::column, c.tp, false,
         trains);
}

// Vocab-parallel cross-entropy all-reduces, per token, the logit max, the sum of exponentials and
// the target logit (three fp32 all-reduces of T values).
void cross_entropy(const LayerContext& c, BlockOps& ops, const std::string& name) {
  const int64_t logits = c.T * (c.m.vocab / c.t);
  const OpCollective sync =
      c.t > 1 ? OpCollective{ir::CollectiveType::all_reduce, Bytes{c.T * 4}, 3} : OpCollective{};
  Op fwd{name,
         c.f.memory_bound(ir::OpClass::cross_entropy, logits * (c.ab + 8), 5.0 * double(logits)),
         {},
         {},
         sync};
  Op bwd = named(name + ".bwd", c.f.memory_bound(ir::OpClass::cross_entropy, logits * (8 + c.ab),
                                                 3.0 * double(logits)));
  fwd.unfused_traffic = bwd.unfused_traffic = kCrossEntropyTraffic;
  ops.add_chain(std::move(fwd), std::move(bwd), kCrossEntropyKernels);
}

// Logits (16-bit) and the fp32 log-softmax kept for each loss's gradient. Eager PyTorch's loss
// (Hugging Face's ForCausalLMLoss: logits.float(), then cross_entropy) holds, where the forward
// turns into the backward, the fp32 log-softmax output it saved, the gradient flowing into it
// and the gradient it produces: three fp32 tensors, 12 B per logit (the 16-bit logits and their
// fp32 copy are freed by then). GPT-2 Large at batch 16 on one H100 is out of memory in PyTorch
// only with these (validate/suites/h100_torch_steps_202611.yaml).
int64_t logit_bytes(const WorkShape& w, int64_t ab) {
  return w.unfused_chains || w.eager_loss ? 12 : ab + 4;
}

void squared_error_loss(const LayerContext& c, BlockOps& ops) {
  const int64_t rows = c.w.micro_batch, elements = rows * c.h;
  ops.add(named("loss", c.f.memory_bound(ir::OpClass::cross_entropy, elements * c.ab * 2,
                                         double(3 * elements))),
          named("loss.bwd", c.f.memory_bound(ir::OpClass::cross_entropy, elements * c.ab * 2,
                                             double(2 * elements))));
}

}  // namespace cs::model::layers
