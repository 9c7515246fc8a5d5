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

struct ComputeEfficiency {
  // H100 cuBLAS BF16 8192^3 reaches ~795-800 TFLOP/s = 0.80 of 989 (validation/README.md); with
  // the half-point below, 8192^3 (1.1 TFLOP) gives 0.80 * 0.9982 = 0.799.
  double gemm_max = 0.80;
  // FLOPs at which a GEMM reaches half of gemm_max. 2 GFLOP is e.g. 1024 x 1024 x 1024: on H100
  // such a product runs in a few microseconds and is launch/occupancy bound (default, uncalibrated).
  double gemm_half_flops = 2e9;
  // Fused attention (FlashAttention-2 via PyTorch SDPA): ~335 TFLOP/s forward+backward on H100,
  // 0.35 of peak (FlashAttention-2 paper, Dao 2023).
  double attention = 0.35;
  // Memory-bound kernels reach ~80% of HBM bandwidth (STREAM-like copies reach ~90%; PyTorch
  // elementwise kernels with index arithmetic a little less).
  double memory = 0.80;
  // Gap between dependent kernels on one stream: launch latency as seen on the GPU timeline.
  // Uncalibrated default (a few us is typical of back-to-back CUDA launches); calibration replaces it.
  SimTime launch_gap = SimTime::from_us(3.0);

  // Calibrated tables (a Profile's; empty by default). Where present they replace the figures
  // above for their class: GEMMs by shape (efficiency of the dtype's peak), attention by FLOPs,
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
  // Norms and softmax / cross-entropy by bytes (efficiency of the memory bandwidth), where their
  // kernels were measured apart from plain streaming; empty: memory_curve.
  EfficiencyCurve norm_curve;
  EfficiencyCurve softmax_curve;
  // A GEMM whose leading dimensions (m and k: A is m x k, B k x n, C m x n, column-major) are not
  // multiples of 16 bytes cannot use the vectorised tensor-core loads: it runs at this share of
  // the aligned rate (1: no penalty). GPT-2's vocabulary of 50,257 is the usual case.
  double misaligned_gemm = 1.0;
};

// Whether a GEMM's leading dimensions break 16-byte alignment for its element type.
bool gemm_misaligned(const ir::ComputeOp& op);

class ComputeModel {
 public:
  ComputeModel(DeviceSpec device, ComputeEfficiency eff = {}) : device_(std::move(device)), eff_(eff) {}
  SimTime time(const ir::ComputeOp& op) const;
  double gemm_efficiency(Flops flops) const;
  const DeviceSpec& device() const { return device_; }
  const ComputeEfficiency& efficiency() const { return eff_; }

 private:
  DeviceSpec device_;
  ComputeEfficiency eff_;
};

}  // namespace cs::cost
