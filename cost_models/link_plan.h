// A collective or transfer as load on the links of the topology: the shared currency of the
// analytic and the flow-level network models, and all that the simulator (sim/) sees of one.
//
// A plan has a latency (launch plus per-step latencies, not bandwidth) and phases that run one
// after the other. A phase moves `units_per_byte` units of work per byte of the collective's
// buffer, at a rate r (units per second) that every link must carry: link l is loaded with
// r * weight. `bytes` is the payload the link carries per unit, `weight` the share of its
// capacity that unit takes, which is larger than `bytes` where the protocol spends line space on
// flags (LL, LL128) or the GPU's SMs spend time on the buffer that the link cannot hide (see
// CollectiveParams::pass_efficiency).
//
// Alone on the network, a phase runs at r = min over its links of capacity / weight; that is the
// analytic (closed-form) model. Sharing links with other phases, rates come from max-min fair
// sharing (sim/flow_network.h); that is the flow-level model.
//
// Which NCCL algorithm and protocol produced a plan is the cost model's business
// (cost_models/comm_plan.h); this header includes nothing of NCCL, and tests/layers_test.cpp
// holds sim/ to it and to cost_model.h.
#pragma once

#include <cstdint>
#include <vector>

#include "common/units.h"

namespace cs::cost {

struct LinkLoad {
  uint32_t link = 0;  // topology link index
  double bytes = 0;   // payload per unit of work
  double weight = 0;  // capacity-seconds x capacity per unit of work (>= bytes)
};

struct LinkPhase {
  double units_per_byte = 0;
  std::vector<LinkLoad> loads;  // sorted by link, one entry per link
  double seconds_per_unit = 0;  // alone on the network: max over links of weight / capacity
};

struct LinkPlan {
  SimTime latency;
  std::vector<LinkPhase> phases;
  double seconds_per_byte = 0;  // alone on the network, all phases
  int channels = 1;             // parallel rings/trees (one per NIC across nodes)

  // Closed form: latency + bytes x seconds_per_byte.
  SimTime time(Bytes bytes) const {
    return latency + SimTime::from_seconds(static_cast<double>(bytes.count) * seconds_per_byte);
  }
};

}  // namespace cs::cost
