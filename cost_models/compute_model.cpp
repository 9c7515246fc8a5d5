#include "cost_models/compute_model.h"

#include <algorithm>

namespace cs::cost {

double ComputeModel::gemm_efficiency(Flops flops) const {
  return eff_.gemm_max * flops.value / (flops.value + eff_.gemm_half_flops);
}

SimTime ComputeModel::time(const ir::ComputeOp& op) const {
  double flop_rate_fraction = 1.0;
  switch (op.op) {
    case ir::OpClass::gemm:
      flop_rate_fraction = eff_.gemm_table.empty() ? gemm_efficiency(op.flops) : eff_.gemm_table.at(op.m, op.n, op.k);
      break;
    case ir::OpClass::attention:
      flop_rate_fraction = eff_.attention_curve.empty() ? eff_.attention : eff_.attention_curve.at(op.flops.value);
      break;
    default: flop_rate_fraction = 1.0; break;  // memory-bound classes: flops rarely bind
  }
  const double bytes = static_cast<double>(op.bytes.count);
  double memory_fraction = eff_.memory;
  if (op.op == ir::OpClass::optimizer && !eff_.optimizer_curve.empty()) {
    memory_fraction = eff_.optimizer_curve.at(bytes);
  } else if (op.op != ir::OpClass::gemm && op.op != ir::OpClass::attention && !eff_.memory_curve.empty()) {
    memory_fraction = eff_.memory_curve.at(bytes);
  }
  const double compute_s =
      op.flops.value > 0 ? op.flops.value / (device_.peak(op.dtype).value * flop_rate_fraction) : 0.0;
  const double memory_s = bytes / (device_.hbm_bandwidth.value * memory_fraction);
  return eff_.launch_gap + SimTime::from_seconds(std::max(compute_s, memory_s));
}

}  // namespace cs::cost
