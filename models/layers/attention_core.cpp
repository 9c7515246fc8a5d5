#include "models/layers/attention_core.h"

#include <cmath>

namespace cs::model::layers {

namespace {

// PyTorch SDPA's cuDNN attention as eager PyTorch launches it, with the heads' output made
// contiguous again ([b, a, s, d] to [b, s, a d]: a copy each way): 3 + 1 kernels forward, 4 + 1
// backward. Counted on the GPT-2 small batch-4 Kineto trace
// (validate/measurements/torch_h100_202611/kineto_gpt2_small_b4.json.gz): 36 launches under
// _cudnn_attention_forward and 48 under its backward for 12 layers, and 24 reshape copies.
constexpr ChainKernels kSdpaKernels{4, 5};

// PyTorch's ring attention (torch/distributed/tensor/experimental/_attention.py,
// _templated_ring_attention and _templated_ring_attention_backward, as of torch 1963fc8,
// 2024-12-23, the version TorchTitan's Dec-2024 benchmarks ran; unchanged in these respects
// since pytorch/pytorch#132820, Aug 2024), with TorchTitan 9dec370's settings
// (--experimental.context_parallel_rotate_method allgather, its default; load balancing and
// convert_to_f32 on, PyTorch's defaults). `bh` is batch x local query heads, `s` the rank's
// tokens (two head-tail chunks), E = bh s d the elements of the rank's attention output.
//   K, V: TorchTitan's Attention repeats the KV heads to the query heads before SDPA
//     (models/llama/model.py, repeat_kv), so the ring carries K and V at the query width: 2E.
//   Forward: K and V made contiguous and concatenated (`pack`, 2 E read and written), one
//     all-gather of that buffer over the CP group issued before step 0's kernel and waited for
//     before step 1's (_AllGatherRotater): later steps slice it, no further communication.
//     Step 0 is the causal kernel on (s, s); step j > 0 a non-causal kernel on (s, s / 2) or
//     (s / 2, s): the same FLOPs as a causal (s, s), priced at the causal kernel's rate for
//     that FLOP count. After each kernel _SDPAMerger upcasts the step's output to fp32 and
//     merges it: out - sigmoid(lse_j - lse) (out - out_j), fused: read out (4 B) and out_j (ab),
//     write out (4 B) per element; step 0 only the upcast (ab + 4), the last also casts back
//     (4 + ab). Eager runs the merge as its to(), sub, mul, sub kernels (4).
//   Backward: zero fp32 dQ, dK, dV (12 E bytes written) and the same pack and all-gather of K
//     and V; step j's kernel (2.5x the forward FLOPs), then its merge adds dQ_j into dQ and
//     dK_j, dV_j into the fp32 dK, dV chunk that arrived from the previous rank (three fp32
//     read-add-writes, 3 (8 + ab) E) and sends that chunk on (fp32 K and V gradients: 8 E
//     bytes, an all_to_all permutation, _AllToAllRotater); step j + 1's merge waits for it, and
//     the last one (the rank's own K, V gradient coming home) is waited for after the loop, by
//     the casts back to ab (3 (4 + ab) E).
// Eager PyTorch waits for a collective at its first use (AsyncCollectiveTensor), so the gather
// runs under step 0's kernel and each gradient pass under the next step's; a traced graph (the
// collectives of a torch.compile'd block, torch/distributed/_functional_collectives.py
// _maybe_wrap_tensor: "wait_tensor() op is immediately called") waits where it issues, and
// Inductor's reorder_for_compute_comm_overlap is off by default, so under torch_compile all of
// it is exposed.
void torch_ring_attention(const LayerContext& c, BlockOps& ops, int64_t bh, int64_t s, int64_t d) {
  const OpFactory& f = c.f;
  const WorkShape& w = c.w;
  const int64_t ab = f.ab, E = bh * s * d;
  const bool traced = w.cp_ring == CpRing::torch_traced;
  const Bytes gathered{w.cp * 2 * E * ab};  // nccl-tests size: the gathered output
  auto elementwise = [&](const std::string& name, int64_t bytes, uint16_t kernels) {
    Op op = named(name, f.memory_bound(ir::OpClass::elementwise, bytes, double(E)));
    op.unfused_kernels = kernels;
    return op;
  };
  ops.forward.push_back(elementwise("attn.core.cp.pack", 4 * E * ab, 2));
  std::vector<Op> bwd{elementwise("attn.core.cp.pack.bwd", 4 * E * ab + 12 * E, 1)};
  for (int64_t j = 0; j < w.cp; ++j) {
    const std::string step = "attn.core.cp" + std::to_string(j);
    const bool last = j == w.cp - 1;
    Op kernel = named(step, f.attention(bh, s, d, 1.0));
    Op kernel_bwd = named(step + ".bwd", f.attention(bh, s, d, 2.5));
    for (Op* k : {&kernel, &kernel_bwd}) {
      k->ring.gathers = j == 0 ? gathered : Bytes{};
      k->ring.waits = j == 1 && !traced;
      k->ring.blocking = traced;
    }
    const int64_t merge = j == 0 ? E * (ab + 4) : E * (8 + ab);
    ops.forward.push_back(std::move(kernel));
    ops.forward.push_back(
        elementwise(step + ".merge", merge + (last ? E * (4 + ab) : 0), j == 0 ? 1 : 4));
    bwd.push_back(std::move(kernel_bwd));
    Op merge_bwd = elementwise(step + ".bwd.merge", 3 * E * (8 + ab), 2);
    merge_bwd.ring.grad_passes = Bytes{8 * E};
    merge_bwd.ring.waits_grad = j > 0 && !traced;
    merge_bwd.ring.blocking = traced;
    bwd.push_back(std::move(merge_bwd));
  }
  Op out = elementwise("attn.core.cp.bwd.out", 3 * E * (4 + ab), 1);
  out.ring.waits_grad = !traced;
  bwd.push_back(std::move(out));
  ops.add_backward_in_order(std::move(bwd));
}

// Transformer Engine's ring attention over cp ranks, load-balanced for the causal mask (the
// sequence in 2 cp chunks, rank i holding chunks i and 2cp - 1 - i): each of the cp steps does
// the causal work of an s_local x s_local block (two half-size chunks against two, half masked),
// so a step is the causal kernel at s_local and a rank does 1/cp of the whole attention. While
// step j computes, the chunk it used travels on to the next rank (backward: K, V and their
// gradients, twice the bytes); step j + 1 waits for it.
// Under a2a+p2p the ring runs over the cp / cp_a2a groups of the all-to-all level, each rank on
// `s` = cp_a2a x its tokens and bh / cp_a2a heads (kv_width / cp_a2a): the same chunk bytes.
void p2p_ring_attention(const LayerContext& c, BlockOps& ops, int64_t bh, int64_t s, int64_t d,
                        int64_t kv_width, int64_t ring) {
  const Bytes kv_chunk{c.w.micro_batch * s * kv_width * c.ab};
  auto step_of = [](Bytes passes, bool waits) {
    RingStep step;
    step.passes = passes;
    step.waits = waits;
    return step;
  };
  std::vector<Op> bwd_steps;
  for (int64_t j = 0; j < ring; ++j) {
    const std::string step = "attn.core.cp" + std::to_string(j);
    const bool last = j == ring - 1;
    ops.forward.push_back({step,
                           c.f.attention(bh, s, d, 1.0),
                           {},
                           {},
                           {},
                           step_of(last ? Bytes{} : kv_chunk, j > 0)});
    bwd_steps.push_back({step + ".bwd",
                         c.f.attention(bh, s, d, 2.5),
                         {},
                         {},
                         {},
                         step_of(last ? Bytes{} : Bytes{2 * kv_chunk.count}, j > 0)});
  }
  ops.add_backward_in_order(std::move(bwd_steps));
}

// Megatron-Core's --cp-comm-type a2a, DeepSpeed-Ulysses as Transformer Engine runs it
// (AttnFuncWithCPAndQKVOA2A, flash_attn_a2a_communicate): each of Q, K and V goes from the
// rank's sequence shard with all its local heads to the whole sequence (of the a = cp_a2a ranks)
// with 1/a of them, by one all-to-all each over the a ranks; the attention runs on a x s tokens
// and bh / a heads (under a2a+p2p, as the ring over the cp / a groups); its output goes back by
// one all-to-all. Backward: the output and its gradient go to the head layout again (two
// all-to-alls: TE saves the output in the sequence layout), the kernel, then dQ, dK and dV go
// back (three). A tensor's all-to-all moves its whole local buffer (nccl-tests' size): Q and the
// output b s (heads / t) d ab, K and V b s (kv_width / 2) ab each. Around each all-to-all TE
// copies the tensor into the all-to-all's layout (movedim + contiguous) and, on the other side,
// reorders the load-balanced sequence chunks (movedim + contiguous, then index_select): three
// copies, each reading and writing the tensor (6x its bytes), priced as one op with its
// all-to-all before it. MLA's Q and output (qk and v head sizes) are priced at their mean `d`:
// their sum is exact.
void all_to_all_attention(const LayerContext& c, BlockOps& ops, int64_t bh, int64_t d,
                          int64_t kv_width) {
  const int64_t a = c.w.cp_a2a, ab = c.ab;
  const int64_t q_bytes = bh * c.s * d * ab, kv_bytes = c.w.micro_batch * c.s * kv_width / 2 * ab;
  auto exchange = [&](const std::string& name, int64_t bytes, int tensors) {
    Op op = named(name, c.f.memory_bound(ir::OpClass::elementwise, 6 * bytes * tensors, 0.0));
    op.tp_before = {ir::CollectiveType::all_to_all, Bytes{bytes}, tensors,
                    OpGroup::context_parallel_a2a};
    return op;
  };
  ops.add(exchange("attn.core.a2a.q", q_bytes, 1), exchange("attn.core.a2a.dq", q_bytes, 1));
  ops.add(exchange("attn.core.a2a.kv", kv_bytes, 2), exchange("attn.core.a2a.dkv", kv_bytes, 2));
  const int64_t heads = bh / a, s = c.s * a, ring = c.w.cp / a;
  if (ring > 1) {
    p2p_ring_attention(c, ops, heads, s, d, kv_width / a, ring);
  } else {
    ops.add(named("attn.core", c.f.attention(heads, s, d, 1.0)),
            named("attn.core.bwd", c.f.attention(heads, s, d, 2.5)));
  }
  ops.add(exchange("attn.core.a2a.out", q_bytes, 1), exchange("attn.core.a2a.dout", q_bytes, 2));
}

// Eager: QK^T, scale + mask + softmax + dropout over the s x s scores, then scores x V.
void eager_attention(const LayerContext& c, BlockOps& ops, int64_t bh, int64_t d) {
  const OpFactory& f = c.f;
  const int64_t s = c.s, ab = c.ab, scores = bh * s * s;
  const int64_t mask = c.m.dropout > 0 ? 1 : 0;  // dropout's 1-byte mask per score
  ops.forward.push_back(named("attn.scores", f.gemm(s, s, d, bh)));
  ops.forward.push_back(
      named("attn.softmax",
            f.memory_bound(ir::OpClass::softmax, scores * (8 * ab + mask), 5.0 * double(scores))));
  ops.forward.push_back(named("attn.av", f.gemm(s, d, s, bh)));
  ops.reversed_backward.push_back(named("attn.scores.dgrad_k", f.gemm(s, d, s, bh)));
  ops.reversed_backward.push_back(named("attn.scores.dgrad_q", f.gemm(s, d, s, bh)));
  ops.reversed_backward.push_back(
      named("attn.softmax.bwd",
            f.memory_bound(ir::OpClass::softmax, scores * (7 * ab + mask), 4.0 * double(scores))));
  ops.reversed_backward.push_back(named("attn.av.dgrad_v", f.gemm(s, d, s, bh)));
  ops.reversed_backward.push_back(named("attn.av.dgrad_p", f.gemm(s, s, d, bh)));
}

}  // namespace

// Query i of a causal window attends min(i + 1, W) keys: s W - W (W - 1) / 2 pairs in all. The
// full kernel counts its causal half as s^2 / 2 (the s x s square less the masked triangle above
// the diagonal; FlashAttention's count, the diagonal's half ignored); counted the same way, a
// window also masks the triangle below its band, (s - W)^2 / 2: s^2 / 2 - (s - W)^2 / 2 =
// s W - W^2 / 2 pairs, 4 d FLOPs each forward (Q K^T and P V), 2.5x that backward. The kernel
// still reads Q, K, V and writes O once. Priced as an unmasked kernel of s queries against the
// mean keys a query attends (n = pairs / s), whose 4 b s n d FLOPs these are: the cost model's
// forward/backward test and the executors read an attention op that way.
ir::ComputeOp windowed_attention(const OpFactory& f, int64_t batch_heads, int64_t s, int64_t window,
                                 int64_t d, double factor) {
  ir::ComputeOp op = f.attention(batch_heads, s, d, factor);
  const double pairs =
      static_cast<double>(s) * static_cast<double>(window) - 0.5 * double(window) * double(window);
  op.causal = false;
  op.n = std::llround(pairs / static_cast<double>(s));
  op.flops = {factor * 4.0 * static_cast<double>(batch_heads) * pairs * static_cast<double>(d)};
  return op;
}

// Hugging Face transformers under SDPA (masking_utils: the causal mask is skipped for is_causal
// only while the keys are fewer than the window) hands a window reaching the sequence to SDPA as a
// boolean mask: the kernel computes the whole s x s square, masked, at the masked rate
// (ComputeOp::explicit_mask). 4 b a s^2 d FLOPs forward, 2.5x that backward. Applied to every
// PyTorch-autograd stack, which is right for Hugging Face models; TorchTitan's windowed models use
// FlexAttention, which skips the masked blocks (not modelled apart).
ir::ComputeOp masked_attention(const OpFactory& f, int64_t batch_heads, int64_t s, int64_t d,
                               double factor) {
  ir::ComputeOp op = f.attention(batch_heads, s, d, factor);
  op.causal = false;
  op.explicit_mask = true;
  op.flops = {factor * 4.0 * static_cast<double>(batch_heads) * static_cast<double>(s) *
              static_cast<double>(s) * static_cast<double>(d)};
  return op;
}

// Otherwise a window at least as long as the rank's sequence is the full causal kernel. Eager
// attention (Hugging Face's eager_attention_forward) multiplies the whole s x s scores and masks
// the window afterwards: its FLOPs do not shrink. Context parallelism with windows is refused
// (model_work.cpp). gpt-oss's sinks add one logit per head to each softmax row: a few FLOPs per
// row against 4 d per attended key, not priced; their gradient is complete after the core's
// backward.
void attention_core(const LayerContext& c, BlockOps& ops, int64_t d, int64_t kv_width,
                    int64_t window, std::vector<int> core_params) {
  const int64_t bh = c.w.micro_batch * (c.m.heads / c.t);  // sequences x local heads
  const size_t first_backward = ops.reversed_backward.size();
  if (c.w.attention == AttentionImpl::eager) {
    eager_attention(c, ops, bh, d);
  } else if (c.w.cp > 1 && c.w.cp_ring != CpRing::p2p) {
    torch_ring_attention(c, ops, bh, c.s, d);
  } else if (c.w.cp_a2a > 1) {
    all_to_all_attention(c, ops, bh, d, kv_width);
  } else if (c.w.cp > 1) {
    p2p_ring_attention(c, ops, bh, c.s, d, kv_width, c.w.cp);
  } else if (window > 0 && window <= c.s && c.w.pytorch_autograd) {
    ops.add_chain(named("attn.core", masked_attention(c.f, bh, c.s, d, 1.0)),
                  named("attn.core.bwd", masked_attention(c.f, bh, c.s, d, 2.5)), kSdpaKernels);
  } else if (window > 0 && window < c.s) {
    ops.add_chain(named("attn.core", windowed_attention(c.f, bh, c.s, window, d, 1.0)),
                  named("attn.core.bwd", windowed_attention(c.f, bh, c.s, window, d, 2.5)),
                  kSdpaKernels);
  } else {
    ops.add_chain(named("attn.core", c.f.attention(bh, c.s, d, 1.0)),
                  named("attn.core.bwd", c.f.attention(bh, c.s, d, 2.5)), kSdpaKernels);
  }
  // The core's backward op that runs last is the first it appended to the reversed list.
  if (!core_params.empty() && ops.reversed_backward.size() > first_backward) {
    std::vector<int>& ready = ops.reversed_backward[first_backward].grads_ready;
    ready.insert(ready.end(), core_params.begin(), core_params.end());
  }
}

}  // namespace cs::model::layers
