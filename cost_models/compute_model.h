// Roofline compute model: an op takes the longer of its arithmetic time and its memory time, plus
// the gap between back-to-back kernels:
//
//   t = launch_gap + max( flops / (peak[dtype] * eff_flops(op)),  bytes / (hbm_bw * eff_mem) )
//
// GEMM efficiency saturates with the size of the product (small GEMMs leave SMs idle and pay tile
// quantisation): eff(flops) = gemm_max_efficiency * flops / (flops + gemm_half_flops).
// Limits of the defaults: no shape-specific tile effects, no L2 reuse. A calibrated Profile
// replaces them with measured tables (GEMM efficiency by shape, kernels by size).
// Validation: defaults reproduce ~795 TFLOP/s for an 8192^3 BF16 GEMM on H100 (public figure).
#pragma once

#include <map>

#include "cost_models/device_spec.h"
#include "cost_models/efficiency_table.h"
#include "taskgraph/task_graph.h"

namespace cs::cost {

// Fused attention as a framework runs it (PyTorch SDPA), measured at one head dimension:
// efficiency (share of the dtype's peak) by the op's own FLOPs, forward and backward apart (on
// H100 the backward kernels run 3-50% slower per FLOP than the forward one at the same shape: 49%
// at head dim 128 and seq 512, 14% at 128 and 8192, 3-7% at 64 and 16384-32768).
struct AttentionCurves {
  EfficiencyCurve forward, backward;
};
// By head dimension (1..1024).
using AttentionByHeadDim = std::map<int64_t, AttentionCurves>;

inline constexpr double kMinRateScale = 0.1, kMaxRateScale = 10.0;

struct ComputeEfficiency {
  // H100 cuBLAS BF16 8192^3 reaches ~795-800 TFLOP/s = 0.80 of 989 (validation/README.md); with
  // the half-point below, 8192^3 (1.1 TFLOP) gives 0.80 * 0.9982 = 0.799.
  double gemm_max = 0.80;
  // FLOPs at which a GEMM reaches half of gemm_max. 2 GFLOP is e.g. 1024 x 1024 x 1024: on H100
  // such a product runs in a few microseconds and is launch/occupancy bound (default,
  // uncalibrated).
  double gemm_half_flops = 2e9;
  // Per dtype, where the GPU's largest matmul rate was measured (DeviceSpec::measured_matmul_*,
  // set by datasheet_efficiency): the share of that dtype's peak a large GEMM saturates at, in
  // place of gemm_max. A profile's own tables and gemm_max leave it empty.
  std::map<ir::DType, double> gemm_max_by_dtype;
  // Fused attention (FlashAttention-2 via PyTorch SDPA): ~335 TFLOP/s forward+backward on H100,
  // 0.35 of peak (FlashAttention-2 paper, Dao 2023).
  double attention = 0.35;
  // Memory-bound kernels reach ~80% of HBM bandwidth (STREAM-like copies reach ~90%; PyTorch
  // elementwise kernels with index arithmetic a little less).
  double memory = 0.80;
  // Gap between dependent kernels on one stream: launch latency as seen on the GPU timeline.
  // Uncalibrated default (a few us is typical of back-to-back CUDA launches); calibration replaces
  // it.
  SimTime launch_gap = SimTime::from_us(3.0);

  // Calibrated tables (a Profile's; empty by default). Where present they replace the figures
  // above for their class: GEMMs by shape (efficiency of the dtype's peak), attention by FLOPs
  // (or by head dimension and FLOPs: attention_by_head_dim below),
  // memory-bound kernels and the optimizer by bytes (efficiency of the memory bandwidth).
  GemmEfficiencyGrid gemm_table;
  EfficiencyCurve attention_curve;
  EfficiencyCurve memory_curve;
  EfficiencyCurve optimizer_curve;
  // Per dtype, where measured: a GEMM or attention in that dtype reads its own table (efficiency
  // of that dtype's peak) instead of the ones above. TF32 and FP8 GEMMs fill a GPU's tensor cores
  // differently from BF16 at small shapes; attention's small-k products do not slow by the peak
  // ratio at all.
  std::map<ir::DType, GemmEfficiencyGrid> gemm_tables;
  std::map<ir::DType, EfficiencyCurve> attention_curves;
  // The head dim attention_curves / attention_curve were measured at, where their FLOPs stand for
  // a score matrix (clustersim's executor's unfused attention, cost::for_executor; 0: FLOPs
  // only). Its time follows the s x s scores it writes, reads and softmaxes, not its FLOPs: an op
  // of head dim d is priced as the measured kernel with the same scores, FLOPs x this / d.
  int64_t attention_curve_head_dim = 0;
  // Norms and softmax / cross-entropy by bytes (efficiency of the memory bandwidth), where their
  // kernels were measured apart from plain streaming; empty: memory_curve.
  EfficiencyCurve norm_curve;
  EfficiencyCurve softmax_curve;
  // Framework attention measured by head dimension, per dtype (a Profile's
  // `attention_by_head_dim`; empty by default). Where the op's dtype has a table it replaces
  // attention_curves / attention_curve / attention for that dtype (see attention_efficiency).
  std::map<ir::DType, AttentionByHeadDim> attention_by_head_dim;
  // The same for FlashAttention-2 (a Profile's `flash2_attention_by_head_dim`; empty by default),
  // read for attention ops marked ir::AttentionKernel::flash2 (a run's
  // `training.attention_backend: flash2`). attention_by_head_dim holds the framework's default
  // kernel (cuDNN flash attention on Hopper); a flash2 op whose dtype has no table here is priced
  // from attention_by_head_dim (then the FLOPs-only curves) as a cudnn op is.
  std::map<ir::DType, AttentionByHeadDim> flash2_attention_by_head_dim;
  // A GEMM with a dimension (m, n or k) that is not a multiple of 16 bytes cannot use the
  // vectorised tensor-core loads: it runs at this share of the aligned rate (1: no penalty).
  // GPT-2's vocabulary of 50,257 is the usual case (see gemm_misaligned).
  double misaligned_gemm = 1.0;
  // Rate corrections fitted from a user's own profiler trace (`calibrate --kineto`, a profile's
  // `rate_scale`): each class's kernels run at this multiple of the rate everything above gives,
  // the launch gap apart (time = launch_gap + work / scale). They carry what differs between the
  // machine the profile was measured on and the user's (clocks under a power cap, library
  // versions); 1 leaves the profile as measured. memory_bound covers every class but GEMMs and
  // attention, as a trace's kernel names sort them (validate/kineto.h).
  // A correction beyond [kMinRateScale, kMaxRateScale] means the trace and the scenario describe
  // different runs, not a slower or faster machine.
  struct RateScale {
    double gemm = 1.0, attention = 1.0, memory_bound = 1.0;
    bool identity() const { return gemm == 1.0 && attention == 1.0 && memory_bound == 1.0; }
  };
  RateScale rate_scale;
};

// The defaults above for a GPU without a profile, with GEMMs saturating at the GPU's measured
// matmul rate where one was published (BF16 also prices FP16, FP8 MXFP8): a B200's FP8 GEMMs at
// 3432.5 / 4500 = 0.763 of the peak instead of 0.80.
ComputeEfficiency datasheet_efficiency(const DeviceSpec& device);

// Whether a GEMM's dimensions break 16-byte alignment for its element type: m, n or k not a
// multiple of 16 bytes' worth of elements.
bool gemm_misaligned(const ir::ComputeOp& op);

// Whether an attention op is a backward pass. ComputeOp carries no phase; the model's ops
// (models/model_work.cpp OpFactory::attention) carry FLOPs = factor x 2 x batch x m x n x k for a
// causal op (x 4 for a full one), factor 1 forward and 2.5 backward: backward above 1.75.
// An op without its shape (batch, m, n or k zero) counts as forward.
bool attention_backward(const ir::ComputeOp& op);

// The table's efficiency (share of the dtype's peak) of an attention op of head dimension
// `head_dim` and `flops` (its own: the backward curve is keyed by the backward op's FLOPs): the
// measured head dim's curve; between two measured head dims, linear in log(head dim) between
// their two curves' values at these FLOPs; below the smallest or above the largest, that one's.
// The table must not be empty.
double attention_efficiency(const AttentionByHeadDim& table, int64_t head_dim, double flops,
                            bool backward);

class ComputeModel {
 public:
  ComputeModel(DeviceSpec device, ComputeEfficiency eff = {})
      : device_(std::move(device)), eff_(eff) {}
  SimTime time(const ir::ComputeOp& op) const;
  // The default curve's share of `dtype`'s peak for a GEMM of `flops` (no table).
  double gemm_efficiency(Flops flops, ir::DType dtype) const;
  const DeviceSpec& device() const { return device_; }
  const ComputeEfficiency& efficiency() const { return eff_; }

 private:
  // time()'s parts: the share of the dtype's peak a GEMM or an attention kernel reaches, and the
  // share of HBM bandwidth an op's memory traffic reaches.
  double gemm_fraction(const ir::ComputeOp& op) const;
  double attention_fraction(const ir::ComputeOp& op) const;
  double memory_fraction(const ir::ComputeOp& op) const;

  DeviceSpec device_;
  ComputeEfficiency eff_;
};

}  // namespace cs::cost
