// A cost model with hand-set durations, so engine tests can state exact expected times.
#pragma once

#include "cost_models/cost_model.h"

namespace cs::test {

class FixedCostModel final : public cost::CostModel {
 public:
  // Compute: `flops` is read as microseconds. Collectives and transfers: `bytes` as microseconds.
  SimTime compute(const ir::ComputeOp& op) const override {
    return SimTime::from_us(op.flops.value);
  }
  cost::CommCost collective(const ir::CollectiveCall& c,
                            const std::vector<ir::RankId>&) const override {
    return {SimTime::from_us(static_cast<double>(c.bytes.count))};
  }
  cost::CommCost transfer(const ir::Transfer& t) const override {
    return {SimTime::from_us(static_cast<double>(t.bytes.count))};
  }
  cost::Interference interference() const override { return slowdowns; }
  SimTime host_time(const ir::ComputeOp& op) const override {
    return {host_per_kernel.ps * op.kernels};
  }
  cost::Interference slowdowns;  // none unless a test sets them
  SimTime host_per_kernel;       // zero unless a test sets it
};

// A compute op whose FixedCostModel duration is `us` microseconds.
inline ir::ComputeOp op_us(double us) {
  ir::ComputeOp op;
  op.flops = {us};
  return op;
}

}  // namespace cs::test
