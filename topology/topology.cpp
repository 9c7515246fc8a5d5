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
    case LinkKind::socket: return "socket";
  }
  return "?";
}

VertexId Topology::add_device(DeviceKind kind, std::string name, int node, bool nvls) {
  if (by_name_.count(name)) throw UserError("topology: device '" + name + "' is defined twice");
  VertexId v = boost::add_vertex(Device{kind, name, node, nvls}, graph_);
  by_name_.emplace(std::move(name), v);
  if (kind == DeviceKind::gpu) gpus_.push_back(v);
  return v;
}

void Topology::add_link(VertexId a, VertexId b, LinkKind kind, BytesPerSecond ab,
                        BytesPerSecond ba, SimTime latency) {
  if (a == b) throw UserError("topology: link from '" + graph_[a].name + "' to itself");
  if (ab.value <= 0 || ba.value <= 0) {
    throw UserError("topology: link '" + graph_[a].name + "' - '" + graph_[b].name + "' needs a positive bandwidth");
  }
  const auto next = static_cast<uint32_t>(links_.size());
  links_.push_back(Link{kind, ab, latency, next});
  links_.push_back(Link{kind, ba, latency, next + 1});
  link_ends_.emplace_back(a, b);
  link_ends_.emplace_back(b, a);
  boost::add_edge(a, b, links_[next], graph_);
  boost::add_edge(b, a, links_[next + 1], graph_);
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
  std::vector<uint32_t> parent_link(n);
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
      parent_link[w] = graph_[*e].index;
      queue.push_back(w);
    }
  }
  if (src != dst && !seen[dst]) {
    throw UserError("topology: GPU " + graph_[src].name + " cannot reach GPU " + graph_[dst].name);
  }
  Route r;
  for (VertexId v = dst; v != src; v = link_source(parent_link[v])) r.links.push_back(parent_link[v]);
  std::reverse(r.links.begin(), r.links.end());
  return cache_->routes.emplace(key, std::move(r)).first->second;
}

BytesPerSecond Topology::bottleneck(const Route& r) const {
  double bw = 1e300;
  for (uint32_t l : r.links) bw = std::min(bw, links_[l].bandwidth.value);
  return {bw};
}

SimTime Topology::latency(const Route& r) const {
  SimTime t;
  for (uint32_t l : r.links) t += links_[l].latency;
  return t;
}

std::string Topology::link_name(uint32_t index) const {
  return graph_[link_ends_.at(index).first].name + " -> " + graph_[link_ends_.at(index).second].name;
}

std::optional<VertexId> Topology::nic_of(int rank) const {
  // Breadth-first over PCIe from the GPU, staying in its node and not passing through other GPUs;
  // the first NIC found is the closest (ties go to the lower vertex, i.e. the one added first).
  const VertexId src = gpu(rank);
  std::vector<bool> seen(boost::num_vertices(graph_), false);
  std::deque<VertexId> queue{src};
  seen[src] = true;
  while (!queue.empty()) {
    const VertexId v = queue.front();
    queue.pop_front();
    if (graph_[v].kind == DeviceKind::nic) return v;
    if (v != src && graph_[v].kind == DeviceKind::gpu) continue;
    std::vector<VertexId> next;
    for (auto [e, end] = boost::out_edges(v, graph_); e != end; ++e) {
      const VertexId w = boost::target(*e, graph_);
      if (!seen[w] && graph_[*e].kind == LinkKind::pcie && graph_[w].node == graph_[src].node) next.push_back(w);
    }
    std::sort(next.begin(), next.end());
    for (VertexId w : next) {
      seen[w] = true;
      queue.push_back(w);
    }
  }
  return std::nullopt;
}

bool Topology::has_nvls(int node) const {
  for (auto [v, end] = boost::vertices(graph_); v != end; ++v) {
    if (graph_[*v].kind == DeviceKind::nvswitch && graph_[*v].node == node && graph_[*v].nvls) return true;
  }
  return false;
}

}  // namespace cs::topo
