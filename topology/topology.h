// The cluster as a directed graph: GPUs, NVSwitches, PCIe switches, CPUs, NICs and
// network switches as vertices; every physical link is two directed edges, one per direction,
// each with its own bandwidth and latency. GPUs are numbered 0..N-1 in the order they were added
// (node-major), which is the rank order the strategies use.
//
// Routes are shortest paths by hop count (ties broken by vertex order, so deterministic). This is
// the static routing of a non-blocking switched fabric; adaptive routing is not modelled.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/units.h"

namespace cs::topo {

enum class DeviceKind : uint8_t { gpu, nvswitch, pcie_switch, cpu, nic, network_switch };
// `socket` is the CPU-to-CPU link of a two-socket server (UPI / xGMI).
enum class LinkKind : uint8_t { nvlink, pcie, infiniband, ethernet, socket };

std::string_view to_string(DeviceKind k);
std::string_view to_string(LinkKind k);

struct Device {
  DeviceKind kind = DeviceKind::gpu;
  std::string name;
  int node = 0;       // server index; network switches use -1
  bool nvls = false;  // an NVSwitch that reduces in the switch (NVLink SHARP, NVSwitch gen 3)
};

// One direction of a physical link. `index` numbers directed links densely from 0 (the two
// directions of a link are 2k and 2k+1), so per-link state can live in flat vectors.
struct Link {
  LinkKind kind = LinkKind::nvlink;
  BytesPerSecond bandwidth;  // this direction
  SimTime latency;
  uint32_t index = 0;
};

// A device, numbered densely from 0 in the order added.
using VertexId = uint32_t;

// One directed link out of a device: where it goes and its index (Link::index).
struct OutLink {
  VertexId target = 0;
  uint32_t link = 0;
};

// A path as directed link indices (see Link::index). Its links live in the topology's route cache,
// as long as the topology does.
struct Route {
  std::span<const uint32_t> links;
};

class Topology {
 public:
  Topology() : cache_(std::make_unique<RouteCache>()), version_(next_version()) {}
  Topology(Topology&&) = default;
  Topology& operator=(Topology&&) = default;

  VertexId add_device(DeviceKind kind, std::string name, int node, bool nvls = false);
  // A full-duplex link: bandwidth `ab` from a to b and `ba` from b to a.
  void add_link(VertexId a, VertexId b, LinkKind kind, BytesPerSecond ab, BytesPerSecond ba,
                SimTime latency);
  void add_link(VertexId a, VertexId b, LinkKind kind, BytesPerSecond both, SimTime latency) {
    add_link(a, b, kind, both, both, latency);
  }

  // Room for `devices` devices and `links` full-duplex links, so that building moves nothing.
  void reserve(size_t devices, size_t links);
  size_t device_count() const { return devices_.size(); }
  const Device& device(VertexId v) const { return devices_[v]; }
  // The links out of `v`, in the order they were added (the order routes break ties in).
  std::span<const OutLink> out_links(VertexId v) const { return out_[v]; }

  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  VertexId gpu(int rank) const { return gpus_.at(static_cast<size_t>(rank)); }
  int node_of(int rank) const { return devices_[gpu(rank)].node; }
  int node_count() const;
  // Every link touching `device`, both directions, at `factor` of its bandwidth (a degraded NIC
  // or port: scenario `degraded:`). Routes are by hop count, so they stay as they are.
  void scale_links_of(VertexId device, double factor);
  // Looks a device up by name; throws UserError listing some valid names if absent.
  VertexId find(const std::string& name) const;

  // GPU-to-GPU route (cached). Throws UserError if the GPUs are not connected.
  Route route(int src_rank, int dst_rank) const;
  // Lowest per-direction bandwidth along a route, and summed latency.
  BytesPerSecond bottleneck(const Route& r) const;
  SimTime latency(const Route& r) const;

  // Directed links by dense index (see Link::index).
  size_t link_count() const { return links_.size(); }
  const Link& link(uint32_t index) const { return links_[index]; }
  VertexId link_source(uint32_t index) const { return link_ends_[index].first; }
  VertexId link_target(uint32_t index) const { return link_ends_[index].second; }
  std::string link_name(uint32_t index) const;  // "n0.gpu3 -> n0.nvswitch"

  // The NIC a GPU uses to leave its node: the nearest one over PCIe (GPU-NIC affinity), or
  // nullopt when the node has none.
  std::optional<VertexId> nic_of(int rank) const;
  // Whether the node's GPUs meet in an NVSwitch that can reduce in the switch (NVLS).
  bool has_nvls(int node) const;

  // Unique to this topology as it stands: every topology built gets a new number, and every
  // device or link added gives it another. A cache of anything derived from routes keys on it
  // (an address is no key: a later topology may be built where a freed one was).
  uint64_t version() const { return version_; }

 private:
  static uint64_t next_version();
  // Plain vectors, not a graph library's: an edge is 8 bytes in its device's list, where Boost's
  // adjacency_list kept each edge's properties in a heap block of their own (building and freeing
  // them took Mixtral 8x7B at 131,072 GPUs from 1.48 s to 1.86 s).
  std::vector<Device> devices_;
  std::vector<std::vector<OutLink>> out_;  // by device
  std::vector<VertexId> gpus_;
  std::vector<Link> links_;  // by index
  std::vector<std::pair<VertexId, VertexId>> link_ends_;
  std::unordered_set<int> nvls_nodes_;  // nodes with an NVLS NVSwitch (has_nvls without a scan)
  // Scratch of one route search, reused so that a search costs what it visits, not the graph's
  // size: distances from the source (fwd) and to the destination (bwd), valid where the entry's
  // stamp is the current search's.
  struct Search {
    uint32_t stamp = 0;
    std::vector<uint32_t> fwd_stamp, fwd_dist, bwd_stamp, bwd_dist, on_path;
    std::vector<std::vector<VertexId>> fwd_levels, bwd_levels;
    bool in_fwd(VertexId v) const { return fwd_stamp[v] == stamp; }
    bool in_bwd(VertexId v) const { return bwd_stamp[v] == stamp; }
    bool marked(VertexId v) const { return on_path[v] == stamp; }
  };
  // Routes by (source rank, destination rank): open addressing on a power-of-two table, at most
  // half full. A plan over a 64-GPU expert group asks for 4,096 routes and a ring over 1,024
  // GPUs for thousands more; with a node per route, finding them cost more than searching them.
  class RouteTable {
   public:
    const Route* find(uint64_t key) const;
    const Route& insert(uint64_t key, Route route);  // key absent
    void clear() { *this = {}; }

   private:
    struct Slot {
      uint64_t key = kEmpty;
      Route route;
    };
    static constexpr uint64_t kEmpty = ~uint64_t{0};  // no rank pair has it (ranks < 2^32 - 1)
    size_t home(uint64_t key) const;
    std::vector<Slot> slots_;
    size_t used_ = 0;
  };
  struct RouteCache {
    std::mutex mutex;
    RouteTable routes;
    // The routes' links, in chunks that never move (a route's span stays valid): a ring over
    // 131,072 GPUs caches a million routes, and a heap block each made building and freeing
    // them a tenth of the run.
    std::vector<std::unique_ptr<uint32_t[]>> link_chunks;
    size_t chunk_used = 0;
    std::span<const uint32_t> keep(const std::vector<uint32_t>& links);
    Search search;
    std::vector<std::optional<std::optional<VertexId>>> nics;  // by rank: nic_of, once known
    // Devices by name, built on the first find(): a 131,072-GPU cluster's half a million names
    // are hashed only when a scenario names a device (`degraded:`). Names are unique: the
    // presets make them so and the scenario reader refuses a repeated one; find() checks.
    std::unordered_map<std::string, VertexId> by_name;
  };
  std::optional<VertexId> find_nic(int rank) const;
  std::vector<uint32_t> shortest_route(VertexId src,
                                       VertexId dst) const;  // caller holds cache_->mutex
  // shortest_route's steps, on cache_->search: a new search from both ends; one level more of the
  // forward or the backward ball (the vertices where the balls meet); the forward ball's
  // vertices that lead to a meeting vertex marked; the walk from src along the marks.
  // Only the source and non-GPU devices forward traffic (edges out of other GPUs do not count).
  bool forwards(VertexId v, VertexId src) const {
    return v == src || devices_[v].kind != DeviceKind::gpu;
  }
  void start_search(VertexId src, VertexId dst) const;
  std::vector<VertexId> grow(bool backward, VertexId src) const;
  void mark_paths(VertexId src, const std::vector<VertexId>& meet) const;
  std::vector<uint32_t> walk(VertexId src) const;
  std::unique_ptr<RouteCache> cache_;  // behind a pointer so a Topology can move
  uint64_t version_ = 0;
};

}  // namespace cs::topo
