#include "cost_models/profile.h"

namespace cs::cost {

Profile for_executor(Profile p) {
  if (!p.executor) return p;
  const ExecutorKernels& k = *p.executor;
  if (!k.attention.empty()) {
    p.compute.attention_curves = k.attention;
    // A dtype the executor's attention was not measured in falls back to the main curve, which
    // must then be the executor's too: its first measured dtype's (bf16 where measured).
    const auto main = k.attention.count(ir::DType::bf16) ? k.attention.find(ir::DType::bf16)
                                                         : k.attention.begin();
    p.compute.attention_curve = main->second;
    p.compute.attention = main->second.points().back().second;
    p.compute.attention_curve_head_dim = k.attention_head_dim;
    // The framework's fused attention measured by head dimension is not the executor's either.
    p.compute.attention_by_head_dim.clear();
    p.compute.flash2_attention_by_head_dim.clear();
  }
  // A tensor clock fitted on framework steps is the share of the rates this executor measured that
  // those frameworks' kernels sustain; the executor's own runs run at the measured rates (campaign
  // 2's same-graph GEMMs on the H200: median task error 3.1% at 1, 7.8% at its fitted 0.95).
  if (p.tensor_clock_ratio != 1.0) {
    p.compute.rate_scale.gemm /= p.tensor_clock_ratio;
    p.compute.rate_scale.attention /= p.tensor_clock_ratio;
    p.tensor_clock_ratio = 1.0;
  }
  if (!k.norm.empty()) p.compute.norm_curve = k.norm;
  if (!k.softmax.empty()) p.compute.softmax_curve = k.softmax;
  return p;
}

}  // namespace cs::cost
