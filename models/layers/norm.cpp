#include "models/layers/norm.h"

namespace cs::model::layers {

namespace {

// Kernels of a norm when a stack does not fuse it (PyTorch eager), counted from the eager code of
// the reference implementations:
//   LayerNorm: one native kernel; backward the input gradient and the weight/bias reduction.
//   RMSNorm as Llama's reference code writes it (cast to fp32, pow, mean, add eps, rsqrt, mul,
//     cast back, mul by the weight): 8; backward 10.
constexpr ChainKernels kLayerNormKernels{1, 2, true};  // layer_norm is on autocast's fp32 list
constexpr ChainKernels kRmsNormKernels{8, 10};

}  // namespace

NormKind norm_kind(const ModelSpec& m) {
  return m.rms_norm() ? NormKind::rms_norm : NormKind::layer_norm;
}

void norm(const LayerContext& c, BlockOps& ops, NormKind kind, const std::string& name,
          int64_t elements, std::vector<int> params) {
  const ChainKernels kernels = kind == NormKind::rms_norm ? kRmsNormKernels : kLayerNormKernels;
  // Eager LayerNorm computes in fp32 under autocast (its fp32 list): its native kernels read and
  // write 4-byte elements, x and y forward (8 B) and dy, x, dx plus the weight gradient's dy, x
  // backward (20 B against 2 kernels x 3 x 4 = 24 priced). Llama's RMSNorm casts to fp32 and
  // back inside its chain, which its 8 + 10 kernels at the fused op's bytes already price: its
  // forward is 36 B per element op by op (the casts 6 + 6, pow 8, mean 4, the normalising mul 8,
  // the weight's mul 4; the [T, 1] ops are negligible) against 8 x 4 = 32.
  const bool in_fp32 = kernels.autocast_fp32 && c.p.autocast_copies;
  const auto e = double(elements);
  ops.add_chain(
      named(name, c.f.memory_bound(ir::OpClass::norm, 2 * elements * c.ab, 5.0 * e)),
      named(name + ".bwd", c.f.memory_bound(ir::OpClass::norm, 3 * elements * c.ab, 8.0 * e),
            std::move(params)),
      kernels, in_fp32);
}

}  // namespace cs::model::layers
