// A collective's plan as the cost models build it: the link plan the simulator runs
// (link_plan.h) and the NCCL algorithm and protocol it stands for. The choice stays in
// cost_models/ (the collective model picks by it, bench-collective and the tests name it); the
// simulator is handed the LinkPlan part only (cost_model.h's CommCost), so sim/ never sees NCCL's
// enums (tests/layers_test.cpp checks that it does not include this header).
#pragma once

#include "cost_models/link_plan.h"
#include "cost_models/nccl_tables.h"

namespace cs::cost {

struct CommPlan : LinkPlan {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
};

}  // namespace cs::cost
