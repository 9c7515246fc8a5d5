#include "cost_models/nccl_comm_shape.h"

#include <algorithm>

namespace cs::cost {

NcclCommShape nccl_comm_shape(const CollectiveModel& model, const std::vector<ir::RankId>& ranks) {
  const topo::Topology& topology = model.topology();
  NcclCommShape shape;
  shape.ranks = static_cast<int>(ranks.size());
  std::vector<int> nodes;
  for (ir::RankId r : ranks) nodes.push_back(topology.node_of(static_cast<int>(r)));
  std::sort(nodes.begin(), nodes.end());
  shape.nodes = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
  shape.arch = model.params().arch;
  const CollectiveModel ring(topology, model.params(),
                             CollectiveOptions{Algorithm::ring, Protocol::simple, true});
  const CommPlan& plan =
      *ring.choose(ir::CollectiveType::all_reduce, Bytes{int64_t{1} << 30}, ranks).plan;
  shape.intra_hop = HopKind::nvlink;
  shape.channels = shape.nodes == 1 ? 24 : 2 * plan.channels;
  shape.ring_bus_bw = plan.phases.empty() ? 0 : 1e-9 / plan.phases.front().seconds_per_unit;
  shape.tree_bus_bw = shape.ring_bus_bw;
  if (topology.has_nvls(nodes.front()) && shape.nodes == 1) {
    const topo::Route first =
        topology.route(static_cast<int>(ranks[0]), static_cast<int>(ranks[1]));
    shape.nvls_channels = 16;
    shape.nvls_bus_bw =
        first.links.empty() ? 0 : topology.link(first.links.front()).bandwidth.value * 1e-9;
  }
  return shape;
}

}  // namespace cs::cost
