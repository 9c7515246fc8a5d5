// Roofline compute + NCCL-style collectives over the topology. The same object serves both
// network fidelity levels: its collective costs are closed-form times, and the plans behind them
// are what the flow-level engine shares links with.
#pragma once

#include "cost_models/collective_model.h"
#include "cost_models/compute_model.h"
#include "cost_models/cost_model.h"

namespace cs::cost {

class AnalyticCostModel final : public CostModel {
 public:
  AnalyticCostModel(ComputeModel compute, CollectiveModel collectives, Interference interference = {})
      : compute_(std::move(compute)), collectives_(std::move(collectives)), interference_(interference) {}
  SimTime compute(const ir::ComputeOp& op) const override { return compute_.time(op); }
  CommCost collective(const ir::CollectiveCall& c, const std::vector<ir::RankId>& ranks) const override {
    const CollectiveChoice choice = collectives_.choose(c.type, c.bytes, ranks);
    return {choice.time, choice.plan};
  }
  CommCost transfer(const ir::Transfer& t) const override {
    const CollectiveChoice choice = collectives_.p2p(t.src, t.dst, t.bytes);
    return {choice.time, choice.plan};
  }
  Interference interference() const override { return interference_; }
  size_t link_count() const override { return collectives_.topology().link_count(); }
  double link_capacity(uint32_t link) const override { return collectives_.link_capacity(link); }
  const ComputeModel& compute_model() const { return compute_; }
  const CollectiveModel& collective_model() const { return collectives_; }

 private:
  ComputeModel compute_;
  CollectiveModel collectives_;
  Interference interference_;
};

}  // namespace cs::cost
