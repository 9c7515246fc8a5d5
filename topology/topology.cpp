#include "topology/topology.h"

#include <algorithm>
#include <deque>
#include <set>

#include "common/error.h"

namespace cs::topo {

std::string_view to_string(DeviceKind k) {
  switch (k) {
    case DeviceKind::gpu: return "gpu";
    case DeviceKind::nvswitch: return "nvswitch";
    case DeviceKind::pcie_switch: return "pcie_switch";
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::nic: return "nic";
    case DeviceKind::network_switch: return "network_switch";
  }
  return "?";
}
std::string_view to_string(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::pcie: return "pcie";
    case LinkKind::infiniband: return "infiniband";
    case LinkKind::ethernet: return "ethernet";
  }
  return "?";
}

VertexId Topology::add_device(DeviceKind kind, std::string name, int node) {
  if (by_name_.count(name)) throw UserError("topology: device '" + name + "' is defined twice");
  VertexId v = boost::add_vertex(Device{kind, name, node}, graph_);
  by_name_.emplace(std::move(name), v);
  if (kind == DeviceKind::gpu) gpus_.push_back(v);
  return v;
}

void Topology::add_link(VertexId a, VertexId b, LinkKind kind, BytesPerSecond ab,
                        BytesPerSecond ba, SimTime latency) {
  if (a == b) throw UserError("topology: link from '" + graph_[a].name + "' to itself");
  boost::add_edge(a, b, Link{kind, ab, latency}, graph_);
  boost::add_edge(b, a, Link{kind, ba, latency}, graph_);
  std::lock_guard lock(cache_->mutex);
  cache_->routes.clear();
}

int Topology::node_count() const {
  std::set<int> nodes;
  for (VertexId g : gpus_) nodes.insert(graph_[g].node);
  return static_cast<int>(nodes.size());
}

VertexId Topology::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  std::vector<std::string> names;
  for (auto& [n, v] : by_name_) names.push_back(n);
  std::sort(names.begin(), names.end());
  std::string list;
  for (size_t i = 0; i < names.size() && i < 12; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > 12) list += ", ...";
  throw UserError("topology: no device named '" + name + "'; devices are: " + list);
}

const Route& Topology::route(int src_rank, int dst_rank) const {
  const uint64_t key = (static_cast<uint64_t>(src_rank) << 32) | static_cast<uint32_t>(dst_rank);
  std::lock_guard lock(cache_->mutex);
  if (auto it = cache_->routes.find(key); it != cache_->routes.end()) return it->second;

  // Breadth-first search over directed edges; GPUs other than the endpoints are not transit
  // nodes (traffic does not hop through a third GPU's memory).
  const VertexId src = gpu(src_rank), dst = gpu(dst_rank);
  const size_t n = boost::num_vertices(graph_);
  std::vector<EdgeId> parent_edge(n);
  std::vector<bool> seen(n, false);
  std::deque<VertexId> queue{src};
  seen[src] = true;
  while (!queue.empty() && !seen[dst]) {
    VertexId v = queue.front();
    queue.pop_front();
    if (v != src && graph_[v].kind == DeviceKind::gpu) continue;
    for (auto [e, end] = boost::out_edges(v, graph_); e != end; ++e) {
      VertexId w = boost::target(*e, graph_);
      if (seen[w]) continue;
      seen[w] = true;
      parent_edge[w] = *e;
      queue.push_back(w);
    }
  }
  if (src != dst && !seen[dst]) {
    throw UserError("topology: GPU " + graph_[src].name + " cannot reach GPU " + graph_[dst].name);
  }
  Route r;
  for (VertexId v = dst; v != src; v = boost::source(parent_edge[v], graph_)) r.edges.push_back(parent_edge[v]);
  std::reverse(r.edges.begin(), r.edges.end());
  return cache_->routes.emplace(key, std::move(r)).first->second;
}

BytesPerSecond Topology::bottleneck(const Route& r) const {
  double bw = 1e300;
  for (EdgeId e : r.edges) bw = std::min(bw, graph_[e].bandwidth.value);
  return {bw};
}

SimTime Topology::latency(const Route& r) const {
  SimTime t;
  for (EdgeId e : r.edges) t += graph_[e].latency;
  return t;
}

bool Topology::uses(const Route& r, LinkKind kind) const {
  return std::any_of(r.edges.begin(), r.edges.end(), [&](EdgeId e) { return graph_[e].kind == kind; });
}

}  // namespace cs::topo
