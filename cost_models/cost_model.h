// The interface the simulator asks for durations. It knows nothing of strategies or YAML; an
// implementation combines a compute model and a collective model over a topology.
#pragma once

#include <vector>

#include "common/units.h"
#include "taskgraph/task_graph.h"

namespace cs::cost {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual SimTime compute(const ir::ComputeOp& op) const = 0;
  // `ranks` are the members of the collective's group, in ring order.
  virtual SimTime collective(const ir::CollectiveCall& call, const std::vector<ir::RankId>& ranks) const = 0;
  virtual SimTime transfer(const ir::Transfer& t) const = 0;
};

}  // namespace cs::cost
