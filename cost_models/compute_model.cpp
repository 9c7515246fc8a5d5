#include "cost_models/compute_model.h"

#include <algorithm>

namespace cs::cost {

double ComputeModel::gemm_efficiency(Flops flops) const {
  return eff_.gemm_max * flops.value / (flops.value + eff_.gemm_half_flops);
}

bool gemm_misaligned(const ir::ComputeOp& op) {
  int64_t size = 2;
  switch (op.dtype) {
    case ir::DType::fp32:
    case ir::DType::tf32: size = 4; break;
    case ir::DType::fp8: size = 1; break;
    default: size = 2; break;
  }
  const int64_t elements = 16 / size;
  return op.m % elements != 0 || op.k % elements != 0;
}

SimTime ComputeModel::time(const ir::ComputeOp& op) const {
  double flop_rate_fraction = 1.0;
  switch (op.op) {
    case ir::OpClass::gemm: {
      const auto own = eff_.gemm_tables.find(op.dtype);
      if (own != eff_.gemm_tables.end()) flop_rate_fraction = own->second.at(op.m, op.n, op.k);
      else flop_rate_fraction = eff_.gemm_table.empty() ? gemm_efficiency(op.flops) : eff_.gemm_table.at(op.m, op.n, op.k);
      if (gemm_misaligned(op)) flop_rate_fraction *= eff_.misaligned_gemm;
      break;
    }
    case ir::OpClass::attention: {
      const auto own = eff_.attention_curves.find(op.dtype);
      if (own != eff_.attention_curves.end()) flop_rate_fraction = own->second.at(op.flops.value);
      else flop_rate_fraction = eff_.attention_curve.empty() ? eff_.attention : eff_.attention_curve.at(op.flops.value);
      break;
    }
    default: flop_rate_fraction = 1.0; break;  // memory-bound classes: flops rarely bind
  }
  const double bytes = static_cast<double>(op.bytes.count);
  double memory_fraction = eff_.memory;
  if (op.op == ir::OpClass::optimizer && !eff_.optimizer_curve.empty()) {
    memory_fraction = eff_.optimizer_curve.at(bytes);
  } else if (op.op == ir::OpClass::norm && !eff_.norm_curve.empty()) {
    memory_fraction = eff_.norm_curve.at(bytes);
  } else if ((op.op == ir::OpClass::softmax || op.op == ir::OpClass::cross_entropy) && !eff_.softmax_curve.empty()) {
    memory_fraction = eff_.softmax_curve.at(bytes);
  } else if (op.op != ir::OpClass::gemm && op.op != ir::OpClass::attention && !eff_.memory_curve.empty()) {
    memory_fraction = eff_.memory_curve.at(bytes);
  }
  const double compute_s =
      op.flops.value > 0 ? op.flops.value / (device_.peak(op.dtype).value * flop_rate_fraction) : 0.0;
  const double memory_s = bytes / (device_.hbm_bandwidth.value * memory_fraction);
  return eff_.launch_gap + SimTime::from_seconds(std::max(compute_s, memory_s));
}

}  // namespace cs::cost
