#include "cost_models/collective_model.h"

#include <algorithm>

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

BytesPerSecond CollectiveModel::ring_bandwidth(const std::vector<ir::RankId>& ranks) const {
  double bw = 1e300;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = topology_.route(static_cast<int>(ranks[i]), static_cast<int>(ranks[(i + 1) % ranks.size()]));
    bw = std::min(bw, effective_bandwidth(r).value);
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
