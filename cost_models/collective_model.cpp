#include "cost_models/collective_model.h"

#include <algorithm>
#include <map>
#include <set>

namespace cs::cost {

BytesPerSecond CollectiveModel::effective_bandwidth(const topo::Route& r) const {
  double bw = 1e300;
  for (topo::EdgeId e : r.edges) {
    const topo::Link& link = topology_.graph()[e];
    double eff = params_.nvlink_efficiency;
    if (link.kind == topo::LinkKind::pcie) eff = params_.pcie_efficiency;
    if (link.kind == topo::LinkKind::infiniband || link.kind == topo::LinkKind::ethernet) eff = params_.network_efficiency;
    bw = std::min(bw, link.bandwidth.value * eff);
  }
  return {bw};
}

int CollectiveModel::network_channels(const std::vector<ir::RankId>& ranks) const {
  // NCCL opens one ring per NIC a node offers the group, each ring leaving the node through its
  // own NIC, so the cross-node hops of the k rings run in parallel. k = the fewest distinct NICs
  // that any node's members of the group use to leave the node.
  std::map<int, std::set<topo::VertexId>> nics_by_node;
  const auto& g = topology_.graph();
  for (ir::RankId r : ranks) {
    for (ir::RankId peer : ranks) {
      if (topology_.node_of(static_cast<int>(peer)) == topology_.node_of(static_cast<int>(r))) continue;
      for (topo::EdgeId e : topology_.route(static_cast<int>(r), static_cast<int>(peer)).edges) {
        const topo::VertexId v = boost::target(e, g);
        if (g[v].kind == topo::DeviceKind::nic) {
          nics_by_node[topology_.node_of(static_cast<int>(r))].insert(v);
          break;
        }
      }
      break;  // one route per member is enough to find its NIC
    }
  }
  int channels = 0;
  for (const auto& [node, nics] : nics_by_node) {
    const int k = static_cast<int>(nics.size());
    channels = channels == 0 ? k : std::min(channels, k);
  }
  return std::max(channels, 1);
}

BytesPerSecond CollectiveModel::ring_bandwidth(const std::vector<ir::RankId>& ranks) const {
  const int channels = network_channels(ranks);
  double bw = 1e300;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = topology_.route(static_cast<int>(ranks[i]), static_cast<int>(ranks[(i + 1) % ranks.size()]));
    const bool crosses_nodes = topology_.uses(r, topo::LinkKind::infiniband) || topology_.uses(r, topo::LinkKind::ethernet);
    bw = std::min(bw, effective_bandwidth(r).value * (crosses_nodes ? channels : 1));
  }
  return {bw};
}

double CollectiveModel::bus_factor(ir::CollectiveType type, size_t n) {
  const double nd = static_cast<double>(n);
  switch (type) {
    case ir::CollectiveType::all_reduce: return 2.0 * (nd - 1) / nd;
    case ir::CollectiveType::broadcast: return 1.0;
    default: return (nd - 1) / nd;
  }
}

SimTime CollectiveModel::time(ir::CollectiveType type, Bytes size,
                              const std::vector<ir::RankId>& ranks) const {
  const size_t n = ranks.size();
  if (n <= 1) return SimTime{};
  const int64_t steps = type == ir::CollectiveType::all_reduce ? 2 * static_cast<int64_t>(n - 1)
                                                               : static_cast<int64_t>(n - 1);
  SimTime hop_latency;
  for (size_t i = 0; i < n; ++i) {
    const auto& r = topology_.route(static_cast<int>(ranks[i]), static_cast<int>(ranks[(i + 1) % n]));
    hop_latency = std::max(hop_latency, topology_.latency(r));
  }
  const double sent = static_cast<double>(size.count) * bus_factor(type, n);
  SimTime t = params_.base_latency;
  t += SimTime{steps * (params_.step_latency + hop_latency).ps};
  t += SimTime::from_seconds(sent / ring_bandwidth(ranks).value);
  return t;
}

SimTime CollectiveModel::p2p_time(ir::RankId src, ir::RankId dst, Bytes size) const {
  if (src == dst) return SimTime{};
  const auto& r = topology_.route(static_cast<int>(src), static_cast<int>(dst));
  return params_.base_latency + topology_.latency(r) +
         SimTime::from_seconds(static_cast<double>(size.count) / effective_bandwidth(r).value);
}

}  // namespace cs::cost
