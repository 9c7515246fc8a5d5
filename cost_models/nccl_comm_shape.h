// The communicator NCCL 2.28's own tuning model would see for a group (nccl_tables.h's
// NcclCommShape; `bench-collective --tuning-table` prints NCCL's table for it). The graph
// bandwidths NCCL would search come from the collective model's topology: ring = the forced
// ring/Simple plan's bus rate at 1 GiB (tree the same), NVLS = the GPU's NVLink egress on one
// NVLS node; channels are NCCL's on 8x H100 (24 ring, 16 NVLS, from an NCCL INFO log) inside a
// node, two per NIC across nodes; NCCL's architecture row is the GPU's (CollectiveParams::arch).
// Tests: tests/nccl_comm_shape_test.cpp.
#pragma once

#include <vector>

#include "cost_models/collective_model.h"
#include "cost_models/nccl_tables.h"

namespace cs::cost {

NcclCommShape nccl_comm_shape(const CollectiveModel& model, const std::vector<ir::RankId>& ranks);

}  // namespace cs::cost
