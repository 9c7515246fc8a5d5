// The cluster as a directed graph (Boost.Graph): GPUs, NVSwitches, PCIe switches, CPUs, NICs and
// network switches as vertices; every physical link is two directed edges, one per direction,
// each with its own bandwidth and latency. GPUs are numbered 0..N-1 in the order they were added
// (node-major), which is the rank order the strategies use.
//
// Routes are shortest paths by hop count (ties broken by vertex order, so deterministic). This is
// the static routing of a non-blocking switched fabric; adaptive routing is not modelled.
#pragma once

// Boost 1.74's adjacency_list has no move constructor, so moving a Topology copies its graph, and
// GCC 12 reports a false -Wmaybe-uninitialized inside Boost's edge-iterator copy.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/adjacency_list.hpp>
#pragma GCC diagnostic pop
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/units.h"

namespace cs::topo {

enum class DeviceKind : uint8_t { gpu, nvswitch, pcie_switch, cpu, nic, network_switch };
enum class LinkKind : uint8_t { nvlink, pcie, infiniband, ethernet };

std::string_view to_string(DeviceKind k);
std::string_view to_string(LinkKind k);

struct Device {
  DeviceKind kind = DeviceKind::gpu;
  std::string name;
  int node = 0;  // server index; network switches use -1
};

struct Link {
  LinkKind kind = LinkKind::nvlink;
  BytesPerSecond bandwidth;  // this direction
  SimTime latency;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Device, Link>;
using VertexId = boost::graph_traits<Graph>::vertex_descriptor;
using EdgeId = boost::graph_traits<Graph>::edge_descriptor;

struct Route {
  std::vector<EdgeId> edges;
};

class Topology {
 public:
  Topology() : cache_(std::make_unique<RouteCache>()) {}
  Topology(Topology&&) = default;
  Topology& operator=(Topology&&) = default;

  VertexId add_device(DeviceKind kind, std::string name, int node);
  // A full-duplex link: bandwidth `ab` from a to b and `ba` from b to a.
  void add_link(VertexId a, VertexId b, LinkKind kind, BytesPerSecond ab, BytesPerSecond ba,
                SimTime latency);
  void add_link(VertexId a, VertexId b, LinkKind kind, BytesPerSecond both, SimTime latency) {
    add_link(a, b, kind, both, both, latency);
  }

  const Graph& graph() const { return graph_; }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  VertexId gpu(int rank) const { return gpus_.at(static_cast<size_t>(rank)); }
  int node_of(int rank) const { return graph_[gpu(rank)].node; }
  int node_count() const;
  // Looks a device up by name; throws UserError listing some valid names if absent.
  VertexId find(const std::string& name) const;

  // GPU-to-GPU route (cached). Throws UserError if the GPUs are not connected.
  const Route& route(int src_rank, int dst_rank) const;
  // Lowest per-direction bandwidth along a route, and summed latency.
  BytesPerSecond bottleneck(const Route& r) const;
  SimTime latency(const Route& r) const;
  // Whether a route touches a link of this kind.
  bool uses(const Route& r, LinkKind kind) const;

 private:
  Graph graph_;
  std::vector<VertexId> gpus_;
  std::unordered_map<std::string, VertexId> by_name_;
  struct RouteCache {
    std::mutex mutex;
    std::unordered_map<uint64_t, Route> routes;
  };
  std::unique_ptr<RouteCache> cache_;  // behind a pointer so a Topology can move
};

// Named cluster presets (see presets.cpp for each one's figures and sources).
struct ClusterPreset {
  std::string name;
  std::string description;
  std::string gpu;        // device spec name for cost_models (e.g. "h100_sxm")
  int gpus_per_node;
  bool multi_node;        // whether `nodes` > 1 is meaningful
};
const std::vector<ClusterPreset>& cluster_presets();
// Builds `nodes` servers of the preset; throws UserError on an unknown name (listing the valid
// ones) or on nodes < 1.
Topology build_preset(const std::string& name, int nodes);
const ClusterPreset& find_cluster_preset(const std::string& name);

}  // namespace cs::topo
