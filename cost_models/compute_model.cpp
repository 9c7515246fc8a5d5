#include "cost_models/compute_model.h"

#include <algorithm>

namespace cs::cost {

double ComputeModel::gemm_efficiency(Flops flops) const {
  return eff_.gemm_max * flops.value / (flops.value + eff_.gemm_half_flops);
}

SimTime ComputeModel::time(const ir::ComputeOp& op) const {
  double flop_rate_fraction = 1.0;
  switch (op.op) {
    case ir::OpClass::gemm: flop_rate_fraction = gemm_efficiency(op.flops); break;
    case ir::OpClass::attention: flop_rate_fraction = eff_.attention; break;
    default: flop_rate_fraction = 1.0; break;  // memory-bound classes: flops rarely bind
  }
  const double compute_s =
      op.flops.value > 0 ? op.flops.value / (device_.peak(op.dtype).value * flop_rate_fraction) : 0.0;
  const double memory_s =
      static_cast<double>(op.bytes.count) / (device_.hbm_bandwidth.value * eff_.memory);
  return eff_.launch_gap + SimTime::from_seconds(std::max(compute_s, memory_s));
}

}  // namespace cs::cost
