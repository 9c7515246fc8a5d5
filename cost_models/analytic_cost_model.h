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
  // `host_per_kernel`: the software stack's dispatch time per kernel launch (zero: never
  // host-bound).
  AnalyticCostModel(ComputeModel compute, CollectiveModel collectives,
                    Interference interference = {}, SimTime host_per_kernel = {})
      : compute_(std::move(compute)),
        collectives_(std::move(collectives)),
        interference_(interference),
        host_per_kernel_(host_per_kernel) {}
  SimTime compute(const ir::ComputeOp& op) const override { return compute_.time(op); }
  CommCost collective(const ir::CollectiveCall& c,
                      const std::vector<ir::RankId>& ranks) const override {
    const CollectiveChoice choice = collectives_.choose(c.type, c.bytes, ranks);
    return {choice.time, choice.plan};
  }
  CommCost transfer(const ir::Transfer& t) const override {
    const CollectiveChoice choice = collectives_.p2p(t.src, t.dst, t.bytes);
    return {choice.time, choice.plan};
  }
  Interference interference() const override { return interference_; }
  SimTime host_time(const ir::ComputeOp& op) const override {
    return {host_per_kernel_.ps * op.kernels};
  }
  size_t link_count() const override { return collectives_.topology().link_count(); }
  double link_capacity(uint32_t link) const override { return collectives_.link_capacity(link); }
  const ComputeModel& compute_model() const { return compute_; }
  const CollectiveModel& collective_model() const { return collectives_; }

 private:
  ComputeModel compute_;
  CollectiveModel collectives_;
  Interference interference_;
  SimTime host_per_kernel_;
};

}  // namespace cs::cost
