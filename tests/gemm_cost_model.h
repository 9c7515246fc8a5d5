// A cost model for schedule derivations by hand: every GEMM takes 1 us, every pipeline transfer
// `transfer` (0 unless given), everything else (elementwise, loss, optimizer, collectives) is free.
#pragma once

#include <vector>

#include "cost_models/cost_model.h"

namespace cs::test {

class GemmMicrosecondCostModel final : public cost::CostModel {
 public:
  explicit GemmMicrosecondCostModel(SimTime transfer = {}) : transfer_(transfer) {}
  SimTime compute(const ir::ComputeOp& op) const override {
    return op.op == ir::OpClass::gemm ? SimTime::from_us(1) : SimTime{};
  }
  cost::CommCost collective(const ir::CollectiveCall&,
                            const std::vector<ir::RankId>&) const override {
    return {};
  }
  cost::CommCost transfer(const ir::Transfer&) const override { return {transfer_}; }

 private:
  SimTime transfer_;
};

}  // namespace cs::test
