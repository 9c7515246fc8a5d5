#include "cost_models/compute_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

namespace cs::cost {

double ComputeModel::gemm_efficiency(Flops flops, ir::DType dtype) const {
  const auto measured = eff_.gemm_max_by_dtype.find(dtype);
  const double max = measured != eff_.gemm_max_by_dtype.end() ? measured->second : eff_.gemm_max;
  return max * flops.value / (flops.value + eff_.gemm_half_flops);
}

ComputeEfficiency datasheet_efficiency(const DeviceSpec& device) {
  ComputeEfficiency e;
  auto share = [&](FlopsPerSecond measured, ir::DType dtype) {
    if (measured.value > 0 && device.supports(dtype))
      e.gemm_max_by_dtype[dtype] = measured.value / device.peak(dtype).value;
  };
  share(device.measured_matmul_bf16, ir::DType::bf16);
  share(device.measured_matmul_bf16, ir::DType::fp16);
  share(device.measured_matmul_fp8, ir::DType::fp8);
  return e;
}

bool gemm_misaligned(const ir::ComputeOp& op) {
  int64_t elements = 8;  // 16 bytes of 16-bit elements
  switch (op.dtype) {
    case ir::DType::fp32:
    case ir::DType::tf32:
      elements = 4;
      break;
    case ir::DType::fp8:
      elements = 16;
      break;
    case ir::DType::fp4:
      elements = 32;  // two a byte
      break;
    default:
      elements = 8;
      break;
  }
  // All three dimensions count. A is m x k, B k x n, C m x n (column-major): k or m is a leading
  // dimension of the operands, and n is the output's (and, transposed, an operand's: cuBLAS picks
  // the layout per pass). A Kineto trace of GPT-2 small in PyTorch on one H100
  // (validate/measurements/torch_h100_202611/kineto_gpt2_small_b4.json.gz) shows all three
  // LM-head GEMMs of the 50,257-word vocabulary -- forward (vocabulary = n), input gradient (= k)
  // and weight gradient (= m) -- running cuBLAS's align1 CUTLASS fallback
  // (cutlass_75_tensorop_f16_s1688gemm_f16_256x128_{tn,nn,nt}_align1) at 103-148 TFLOP/s, 0.10-0.15
  // of the fp16 peak: 2.1-3.1 ms each for 2 x 4096 x 768 x 50257 FLOPs. The shipped H100
  // profile's fp16 table x misaligned_gemm (0.173, probed with k misaligned) gives 115-136 TFLOP/s
  // for the three; judging m and k only priced the forward one as aligned, at 666 TFLOP/s.
  return op.m % elements != 0 || op.n % elements != 0 || op.k % elements != 0;
}

bool attention_backward(const ir::ComputeOp& op) {
  const double base = (op.causal ? 2.0 : 4.0) * static_cast<double>(op.batch) *
                      static_cast<double>(op.m) * static_cast<double>(op.n) *
                      static_cast<double>(op.k);
  return base > 0 && op.flops.value > 1.75 * base;
}

namespace {

// An attention kernel given an explicit mask runs at this share of the unmasked non-causal
// kernel's rate over the same s x s square. Our H200 kernel database
// (validate/measurements/h200_20261128/kernels/attention.csv; SDPA's cuDNN back end, bf16,
// head_dim 128, 32 heads, a 4,096-token band mask) times forward + backward at 48.6 ms against
// 28.1-28.9 ms unmasked non-causal at sequence 8,192 x 4 (0.59), and 207.8 against 109.1-110.3 ms
// at 32,768 x 1 (0.53): 0.56, their mean. Kernel rows, not step rows: no architecture of the
// step split was used.
constexpr double kMaskedAttentionShare = 0.56;

double curve_at(const AttentionCurves& c, double flops, bool backward) {
  // The loader requires both; a table built in memory with one of them reads the other.
  const EfficiencyCurve& own = backward ? c.backward : c.forward;
  return (own.empty() ? (backward ? c.forward : c.backward) : own).at(flops);
}

}  // namespace

double attention_efficiency(const AttentionByHeadDim& table, int64_t head_dim, double flops,
                            bool backward) {
  if (table.empty()) throw std::logic_error("attention_efficiency on an empty table");
  const auto hi = table.lower_bound(head_dim);  // first measured head dim >= head_dim
  if (hi == table.end()) return curve_at(std::prev(hi)->second, flops, backward);
  if (hi->first == head_dim || hi == table.begin()) return curve_at(hi->second, flops, backward);
  const auto lo = std::prev(hi);
  const double t =
      (std::log(static_cast<double>(head_dim)) - std::log(static_cast<double>(lo->first))) /
      (std::log(static_cast<double>(hi->first)) - std::log(static_cast<double>(lo->first)));
  const double a = curve_at(lo->second, flops, backward), b = curve_at(hi->second, flops, backward);
  return a + t * (b - a);
}

double ComputeModel::gemm_fraction(const ir::ComputeOp& op) const {
  const auto own = eff_.gemm_tables.find(op.dtype);
  const double fraction = own != eff_.gemm_tables.end() ? own->second.at(op.m, op.n, op.k)
                          : eff_.gemm_table.empty()     ? gemm_efficiency(op.flops, op.dtype)
                                                        : eff_.gemm_table.at(op.m, op.n, op.k);
  return gemm_misaligned(op) ? fraction * eff_.misaligned_gemm : fraction;
}

// Measured by head dimension (op.k) where the op's dtype has such a table; else by FLOPs only. A
// FlashAttention-2 op reads its own table where the profile has one for its dtype, else the
// default kernel's.
double ComputeModel::attention_fraction(const ir::ComputeOp& op) const {
  const AttentionByHeadDim* by_head_dim = nullptr;
  auto pick = [&](const std::map<ir::DType, AttentionByHeadDim>& tables) {
    const auto t = tables.find(op.dtype);
    if (!by_head_dim && t != tables.end() && !t->second.empty()) by_head_dim = &t->second;
  };
  if (op.attention_kernel == ir::AttentionKernel::flash2) pick(eff_.flash2_attention_by_head_dim);
  pick(eff_.attention_by_head_dim);
  double fraction = 1.0;
  if (by_head_dim && op.k > 0) {
    fraction = attention_efficiency(*by_head_dim, op.k, op.flops.value, attention_backward(op));
  } else {
    // Scores-keyed curves (attention_curve_head_dim): the same scores at the measured head dim
    // take the same time, so the rate per FLOP scales with d.
    const double per_score = eff_.attention_curve_head_dim > 0 && op.k > 0
                                 ? double(op.k) / double(eff_.attention_curve_head_dim)
                                 : 1.0;
    const double at = op.flops.value / per_score;
    const auto own = eff_.attention_curves.find(op.dtype);
    if (own != eff_.attention_curves.end())
      fraction = own->second.at(at) * per_score;
    else
      fraction =
          (eff_.attention_curve.empty() ? eff_.attention : eff_.attention_curve.at(at)) * per_score;
  }
  if (op.explicit_mask) fraction *= kMaskedAttentionShare;
  return fraction;
}

double ComputeModel::memory_fraction(const ir::ComputeOp& op) const {
  const double bytes = static_cast<double>(op.bytes.count);
  if (op.op == ir::OpClass::optimizer && !eff_.optimizer_curve.empty())
    return eff_.optimizer_curve.at(bytes);
  if (op.op == ir::OpClass::norm && !eff_.norm_curve.empty()) return eff_.norm_curve.at(bytes);
  if ((op.op == ir::OpClass::softmax || op.op == ir::OpClass::cross_entropy) &&
      !eff_.softmax_curve.empty())
    return eff_.softmax_curve.at(bytes);
  if (op.op != ir::OpClass::gemm && op.op != ir::OpClass::attention && !eff_.memory_curve.empty())
    return eff_.memory_curve.at(bytes);
  return eff_.memory;
}

SimTime ComputeModel::time(const ir::ComputeOp& op) const {
  // Memory-bound classes: their FLOPs rarely bind, at the dtype's peak.
  const double flop_rate_fraction = op.op == ir::OpClass::gemm        ? gemm_fraction(op)
                                    : op.op == ir::OpClass::attention ? attention_fraction(op)
                                                                      : 1.0;
  const double compute_s =
      op.flops.value > 0 ? op.flops.value / (device_.peak(op.dtype).value * flop_rate_fraction)
                         : 0.0;
  const double memory_s =
      static_cast<double>(op.bytes.count) / (device_.hbm_bandwidth.value * memory_fraction(op));
  const double scale = op.op == ir::OpClass::gemm        ? eff_.rate_scale.gemm
                       : op.op == ir::OpClass::attention ? eff_.rate_scale.attention
                                                         : eff_.rate_scale.memory_bound;
  return eff_.launch_gap + SimTime::from_seconds(std::max(compute_s, memory_s) / scale);
}

}  // namespace cs::cost
