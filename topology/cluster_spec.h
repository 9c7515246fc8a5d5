// A cluster described by its parts: what one server looks like inside (how its GPUs meet, where
// its NICs sit) and how servers are wired together (the fabric). Presets are ClusterSpecs with
// published figures (presets.cpp); a scenario can start from a preset and change any field.
//
// Inside a node:
//   nvswitch      every GPU has one NVLink port group to an NVSwitch plane (modelled as one
//                 logical switch: NCCL stripes traffic over all switch chips, so a GPU's aggregate
//                 NVLink bandwidth is the figure that matters). DGX/HGX H100, H200, A100.
//   nvlink_pairs  GPUs 2i and 2i+1 joined by an NVLink bridge; everything else over PCIe.
//   pcie          GPUs under PCIe switches (gpus_per_pcie_switch each), switches under the CPU
//                 sockets' root complexes, sockets joined by an inter-socket link.
// NICs hang off the PCIe switches, NIC i under switch i * switches / nics (GPU-NIC affinity).
//
// Between nodes (fabric):
//   single_switch   all NICs on one non-blocking switch.
//   rail_optimized  NIC r of every node goes to a leaf of rail r (nodes_per_leaf nodes per leaf);
//                   leaves meet in a spine. Same-rail traffic stays on its leaf.
//   fat_tree        all NICs of a node go to the node group's leaf; leaves meet in a spine.
// The spine is one logical non-blocking switch; a leaf's uplink to it carries
// nodes_per_leaf x NIC bandwidth / oversubscription per direction (ECMP spreading assumed ideal).
#pragma once

#include <string>
#include <vector>

#include "topology/topology.h"

namespace cs::topo {

enum class IntraNode : uint8_t { nvswitch, nvlink_pairs, pcie };
enum class FabricKind : uint8_t { single_switch, rail_optimized, fat_tree };

std::string_view to_string(IntraNode k);
std::string_view to_string(FabricKind k);

struct NodeSpec {
  int gpus = 8;
  IntraNode intra = IntraNode::nvswitch;
  BytesPerSecond nvlink;  // per GPU per direction (nvswitch) or per bridge (nvlink_pairs)
  bool nvls = false;      // NVSwitch reduces in the switch (H100/H200 NVSwitch gen 3)
  BytesPerSecond pcie;    // one x16 link, per direction
  int gpus_per_pcie_switch = 1;
  int sockets = 1;
  BytesPerSecond inter_socket;              // per direction; used when sockets > 1
  int nics = 0;                             // network adapters per node (0: single-node machine)
  BytesPerSecond nic;                       // per NIC per direction
  LinkKind network = LinkKind::infiniband;  // infiniband or ethernet (RoCE)
};

struct FabricSpec {
  FabricKind kind = FabricKind::rail_optimized;
  int nodes_per_leaf = 32;        // a DGX SuperPOD scalable unit is 32 nodes
  double oversubscription = 1.0;  // leaf downlink : uplink bandwidth
};

struct ClusterSpec {
  std::string name;  // preset name, or "custom"
  std::string gpu;   // device spec name for cost_models (e.g. "h100_sxm")
  std::string description;
  NodeSpec node;
  FabricSpec fabric;
  int nodes = 1;
  int gpu_count() const { return node.gpus * nodes; }
};

// Checks the spec (throws UserError naming the field) and builds its topology.
Topology build_cluster(const ClusterSpec& spec);
void validate(const ClusterSpec& spec);

// Presets (see presets.cpp for every figure's source).
const std::vector<ClusterSpec>& cluster_presets();
// Throws UserError on an unknown name, listing the valid ones.
const ClusterSpec& find_cluster_preset(const std::string& name);
// The preset with `nodes` servers; throws UserError if nodes < 1 or the preset has no NICs and
// nodes > 1.
ClusterSpec preset_with_nodes(const std::string& name, int nodes);
inline Topology build_preset(const std::string& name, int nodes) {
  return build_cluster(preset_with_nodes(name, nodes));
}

}  // namespace cs::topo
