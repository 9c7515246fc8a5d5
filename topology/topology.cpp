#include "topology/topology.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <set>
#include <stdexcept>

#include "common/error.h"

namespace cs::topo {

std::string_view to_string(DeviceKind k) {
  switch (k) {
    case DeviceKind::gpu:
      return "gpu";
    case DeviceKind::nvswitch:
      return "nvswitch";
    case DeviceKind::pcie_switch:
      return "pcie_switch";
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::nic:
      return "nic";
    case DeviceKind::network_switch:
      return "network_switch";
  }
  return "?";
}
std::string_view to_string(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink:
      return "nvlink";
    case LinkKind::pcie:
      return "pcie";
    case LinkKind::infiniband:
      return "infiniband";
    case LinkKind::ethernet:
      return "ethernet";
    case LinkKind::socket:
      return "socket";
  }
  return "?";
}

uint64_t Topology::next_version() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

VertexId Topology::add_device(DeviceKind kind, std::string name, int node, bool nvls) {
  version_ = next_version();
  const auto v = static_cast<VertexId>(devices_.size());
  devices_.push_back(Device{kind, std::move(name), node, nvls});
  out_.emplace_back();
  if (kind == DeviceKind::gpu) gpus_.push_back(v);
  if (kind == DeviceKind::nvswitch && nvls) nvls_nodes_.insert(node);
  return v;
}

void Topology::add_link(VertexId a, VertexId b, LinkKind kind, BytesPerSecond ab, BytesPerSecond ba,
                        SimTime latency) {
  if (a >= devices_.size() || b >= devices_.size())
    throw std::logic_error("topology: a link between devices not added");
  if (a == b) throw UserError("topology: link from '" + devices_[a].name + "' to itself");
  if (ab.value <= 0 || ba.value <= 0) {
    throw UserError("topology: link '" + devices_[a].name + "' - '" + devices_[b].name +
                    "' needs a positive bandwidth");
  }
  version_ = next_version();
  const auto next = static_cast<uint32_t>(links_.size());
  links_.push_back(Link{kind, ab, latency, next});
  links_.push_back(Link{kind, ba, latency, next + 1});
  link_ends_.emplace_back(a, b);
  link_ends_.emplace_back(b, a);
  out_[a].push_back({b, next});
  out_[b].push_back({a, next + 1});
  std::lock_guard lock(cache_->mutex);
  cache_->routes.clear();
  cache_->nics.clear();
}

void Topology::reserve(size_t devices, size_t links) {
  devices_.reserve(devices);
  out_.reserve(devices);
  links_.reserve(2 * links);
  link_ends_.reserve(2 * links);
}

void Topology::scale_links_of(VertexId device, double factor) {
  if (!(factor > 0)) throw UserError("topology: a link's bandwidth factor must be positive");
  version_ = next_version();
  for (size_t i = 0; i < links_.size(); ++i) {
    if (link_ends_[i].first == device || link_ends_[i].second == device)
      links_[i].bandwidth.value *= factor;
  }
}

int Topology::node_count() const {
  std::set<int> nodes;
  for (VertexId g : gpus_) nodes.insert(devices_[g].node);
  return static_cast<int>(nodes.size());
}

VertexId Topology::find(const std::string& name) const {
  std::lock_guard lock(cache_->mutex);
  auto& by_name = cache_->by_name;
  if (by_name.size() != devices_.size()) {  // first lookup, or devices added since
    by_name.clear();
    for (VertexId v = 0; v < devices_.size(); ++v) {
      const std::string& n = devices_[v].name;
      if (!by_name.emplace(n, v).second)
        throw UserError("topology: device '" + n + "' is defined twice");
    }
  }
  auto it = by_name.find(name);
  if (it != by_name.end()) return it->second;
  std::vector<std::string> names;
  for (auto& [n, v] : by_name) names.push_back(n);
  std::sort(names.begin(), names.end());
  std::string list;
  for (size_t i = 0; i < names.size() && i < 12; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > 12) list += ", ...";
  throw UserError("topology: no device named '" + name + "'; devices are: " + list);
}

Route Topology::route(int src_rank, int dst_rank) const {
  const uint64_t key = (static_cast<uint64_t>(src_rank) << 32) | static_cast<uint32_t>(dst_rank);
  std::lock_guard lock(cache_->mutex);
  if (const Route* known = cache_->routes.find(key)) return *known;
  const VertexId src = gpu(src_rank), dst = gpu(dst_rank);
  Route r;
  if (src != dst) r.links = cache_->keep(shortest_route(src, dst));
  return cache_->routes.insert(key, r);
}

size_t Topology::RouteTable::home(uint64_t key) const {
  // Fibonacci hashing: the product's high bits, as many as the table's size needs.
  const auto bits = static_cast<unsigned>(std::countr_zero(slots_.size()));
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

const Route* Topology::RouteTable::find(uint64_t key) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(key);; i = (i + 1) & mask) {
    if (slots_[i].key == key) return &slots_[i].route;
    if (slots_[i].key == kEmpty) return nullptr;
  }
}

const Route& Topology::RouteTable::insert(uint64_t key, Route route) {
  if (2 * (used_ + 1) > slots_.size()) {  // grow to keep the table at most half full
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(1024, 2 * old.size()), Slot{});
    used_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty) insert(s.key, s.route);
    }
  }
  const size_t mask = slots_.size() - 1;
  size_t i = home(key);
  while (slots_[i].key != kEmpty) i = (i + 1) & mask;
  slots_[i] = {key, route};
  ++used_;
  return slots_[i].route;
}

std::span<const uint32_t> Topology::RouteCache::keep(const std::vector<uint32_t>& links) {
  constexpr size_t kChunk = size_t{1} << 16;  // link indices per chunk: 256 KiB, some 8,000 routes
  if (link_chunks.empty() || chunk_used + links.size() > kChunk) {
    link_chunks.push_back(std::make_unique<uint32_t[]>(std::max(kChunk, links.size())));
    chunk_used = 0;
  }
  uint32_t* at = link_chunks.back().get() + chunk_used;
  std::copy(links.begin(), links.end(), at);
  chunk_used += links.size();
  return {at, links.size()};
}

// The route is the path a breadth-first search from `src` records (directed edges; GPUs other
// than the endpoints are not transit nodes, as traffic does not hop through a third GPU's memory):
// among the shortest paths, the one whose out-edge positions, vertex by vertex, are
// lexicographically smallest (BFS dequeues a level in that order, and a vertex keeps the first
// edge that reached it). A plain BFS visits the whole cluster for every route, so a ring over
// thousands of nodes cost the square of the cluster. Here the search runs from both ends, level
// by level on the cheaper side, until the balls meet (their radii then sum to the distance D);
// the vertices on some shortest path are marked back from the meeting layer, and the walk from
// `src` takes at each vertex the first out-edge that stays on one: the same path, found in what
// the two balls hold.
std::vector<uint32_t> Topology::shortest_route(VertexId src, VertexId dst) const {
  Search& s = cache_->search;
  start_search(src, dst);
  auto cost = [&](const std::vector<VertexId>& level) {
    size_t c = 0;
    for (VertexId v : level) c += out_[v].size();
    return c;
  };
  std::vector<VertexId> meet;
  while (meet.empty()) {
    const std::vector<VertexId>& ff = s.fwd_levels.back();
    const std::vector<VertexId>& bf = s.bwd_levels.back();
    if (ff.empty() || bf.empty()) {
      throw UserError("topology: GPU " + devices_[src].name + " cannot reach GPU " +
                      devices_[dst].name);
    }
    meet = grow(cost(ff) > cost(bf), src);
  }
  mark_paths(src, meet);
  return walk(src);
}

void Topology::start_search(VertexId src, VertexId dst) const {
  Search& s = cache_->search;
  const size_t n = devices_.size();
  if (s.fwd_stamp.size() != n ||
      ++s.stamp == 0) {  // first search, a grown graph, or a wrapped stamp
    s.fwd_stamp.assign(n, 0);
    s.bwd_stamp.assign(n, 0);
    s.on_path.assign(n, 0);
    s.fwd_dist.resize(n);
    s.bwd_dist.resize(n);
    s.stamp = 1;
  }
  s.fwd_levels.assign(1, {src});
  s.bwd_levels.assign(1, {dst});
  s.fwd_stamp[src] = s.stamp;
  s.fwd_dist[src] = 0;
  s.bwd_stamp[dst] = s.stamp;
  s.bwd_dist[dst] = 0;
}

// One level more of the forward ball (from src, along out-edges) or of the backward one (towards
// dst, along in-edges: the in-edges of v are the reverses of its out-edges, link 2k+1 is link 2k
// backwards), returning the new vertices the other ball holds. Only src and non-GPU devices
// forward traffic: forward, a GPU other than src is not expanded; backward, it is not added.
std::vector<VertexId> Topology::grow(bool backward, VertexId src) const {
  Search& s = cache_->search;
  std::vector<std::vector<VertexId>>& levels = backward ? s.bwd_levels : s.fwd_levels;
  std::vector<uint32_t>& stamp = backward ? s.bwd_stamp : s.fwd_stamp;
  std::vector<uint32_t>& dist = backward ? s.bwd_dist : s.fwd_dist;
  const std::vector<uint32_t>& other = backward ? s.fwd_stamp : s.bwd_stamp;
  std::vector<VertexId> next, meet;
  const auto d = static_cast<uint32_t>(levels.size());
  for (VertexId v : levels.back()) {
    if (!backward && !forwards(v, src)) continue;
    for (const OutLink& e : out_[v]) {
      const VertexId w = e.target;
      if (stamp[w] == s.stamp || (backward && !forwards(w, src))) continue;
      stamp[w] = s.stamp;
      dist[w] = d;
      next.push_back(w);
      if (other[w] == s.stamp) meet.push_back(w);
    }
  }
  levels.push_back(std::move(next));
  return meet;
}

// The first meeting: D = r_fwd + r_bwd, and every meeting vertex lies on a shortest path at
// distance r_fwd from src. Marks the forward ball's vertices that lead to one, level by level.
void Topology::mark_paths(VertexId src, const std::vector<VertexId>& meet) const {
  Search& s = cache_->search;
  const auto r_fwd = static_cast<uint32_t>(s.fwd_levels.size() - 1);
  for (VertexId m : meet) s.on_path[m] = s.stamp;
  for (uint32_t i = r_fwd; i-- > 0;) {
    for (VertexId v : s.fwd_levels[i]) {
      if (!forwards(v, src)) continue;
      for (const OutLink& e : out_[v]) {
        const VertexId w = e.target;
        if (s.marked(w) && s.in_fwd(w) && s.fwd_dist[w] == i + 1) {
          s.on_path[v] = s.stamp;
          break;
        }
      }
    }
  }
}

// At each vertex the first out-edge onto a shortest path: forward marks up to the meeting layer,
// then distances to dst.
std::vector<uint32_t> Topology::walk(VertexId src) const {
  const Search& s = cache_->search;
  const auto r_fwd = static_cast<uint32_t>(s.fwd_levels.size() - 1);
  const uint32_t distance = r_fwd + static_cast<uint32_t>(s.bwd_levels.size() - 1);
  std::vector<uint32_t> links;
  links.reserve(distance);
  VertexId v = src;
  for (uint32_t step = 1; step <= distance; ++step) {
    const auto on_path = [&](VertexId w) {
      return step <= r_fwd ? s.marked(w) && s.in_fwd(w) && s.fwd_dist[w] == step
                           : s.in_bwd(w) && s.bwd_dist[w] == distance - step;
    };
    const auto e = std::find_if(out_[v].begin(), out_[v].end(),
                                [&](const OutLink& o) { return on_path(o.target); });
    if (e == out_[v].end())
      throw std::logic_error("topology: route search lost its path");  // cannot happen
    links.push_back(e->link);
    v = e->target;
  }
  return links;
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
  return devices_[link_ends_.at(index).first].name + " -> " +
         devices_[link_ends_.at(index).second].name;
}

std::optional<VertexId> Topology::nic_of(int rank) const {
  (void)gpu(rank);  // an unknown rank throws, as before
  std::lock_guard lock(cache_->mutex);
  auto& nics = cache_->nics;  // every group's plan asks for each member's NIC
  if (nics.size() != gpus_.size()) nics.assign(gpus_.size(), std::nullopt);
  auto& known = nics[static_cast<size_t>(rank)];
  if (!known) known = find_nic(rank);
  return *known;
}

std::optional<VertexId> Topology::find_nic(int rank) const {
  // Breadth-first over PCIe from the GPU, staying in its node and not passing through other GPUs;
  // the first NIC found is the closest (ties go to the lower vertex, i.e. the one added first).
  // A node has a few dozen devices: plain vectors, searched linearly (asked once per GPU, 131,072
  // times on the largest clusters).
  const VertexId src = gpu(rank);
  std::vector<VertexId> queue{src};  // also what has been seen
  std::vector<VertexId> next;
  for (size_t head = 0; head < queue.size(); ++head) {
    const VertexId v = queue[head];
    if (devices_[v].kind == DeviceKind::nic) return v;
    if (v != src && devices_[v].kind == DeviceKind::gpu) continue;
    next.clear();
    for (const OutLink& e : out_[v]) {
      const VertexId w = e.target;
      if (links_[e.link].kind == LinkKind::pcie && devices_[w].node == devices_[src].node &&
          std::find(queue.begin(), queue.end(), w) == queue.end() &&
          std::find(next.begin(), next.end(), w) == next.end())
        next.push_back(w);
    }
    std::sort(next.begin(), next.end());
    queue.insert(queue.end(), next.begin(), next.end());
  }
  return std::nullopt;
}

bool Topology::has_nvls(int node) const { return nvls_nodes_.count(node) > 0; }

}  // namespace cs::topo
