// The fast fidelity level: roofline compute + analytic ring collectives, no link sharing.
#pragma once

#include "cost_models/collective_model.h"
#include "cost_models/compute_model.h"
#include "cost_models/cost_model.h"

namespace cs::cost {

class AnalyticCostModel final : public CostModel {
 public:
  AnalyticCostModel(ComputeModel compute, CollectiveModel collectives)
      : compute_(std::move(compute)), collectives_(std::move(collectives)) {}
  SimTime compute(const ir::ComputeOp& op) const override { return compute_.time(op); }
  SimTime collective(const ir::CollectiveCall& c, const std::vector<ir::RankId>& ranks) const override {
    return collectives_.time(c.type, c.bytes, ranks);
  }
  SimTime transfer(const ir::Transfer& t) const override {
    return collectives_.p2p_time(t.src, t.dst, t.bytes);
  }
  const ComputeModel& compute_model() const { return compute_; }
  const CollectiveModel& collective_model() const { return collectives_; }

 private:
  ComputeModel compute_;
  CollectiveModel collectives_;
};

}  // namespace cs::cost
