// Cluster presets. Figures are per direction.
//
// NVLink through NVSwitch is modelled as one logical switch per node: a GPU's NVLink ports spread
// over the NVSwitch chips and NCCL stripes traffic over all of them, so a GPU's aggregate NVLink
// bandwidth is the figure that matters.
//   H100 SXM (NVLink4): 18 links x 25 GB/s = 450 GB/s per direction (900 GB/s bidirectional).
//   A100 SXM (NVLink3): 12 links x 25 GB/s = 300 GB/s per direction (600 GB/s bidirectional).
// Multi-node: one NIC per GPU behind the GPU's PCIe switch (DGX H100: ConnectX-7 NDR 400 Gb/s;
// DGX A100: ConnectX-6 HDR 200 Gb/s), all NICs on one non-blocking InfiniBand switch.
// Sources: NVIDIA DGX H100 / DGX A100 user guides; ../shared/validation/README.md.
#include "common/error.h"
#include "topology/topology.h"

namespace cs::topo {
namespace {

constexpr BytesPerSecond kNvlink4PerGpu{450e9};   // 18 x 25 GB/s
constexpr BytesPerSecond kNvlink3PerGpu{300e9};   // 12 x 25 GB/s
constexpr BytesPerSecond kPcieGen5x16{63e9};      // 32 GT/s x 16 lanes, 128b/130b
constexpr BytesPerSecond kPcieGen4x16{31.5e9};
constexpr BytesPerSecond kIbNdr{50e9};            // 400 Gb/s
constexpr BytesPerSecond kIbHdr{25e9};            // 200 Gb/s
// Hop latencies are uncalibrated round figures: sub-microsecond for an NVLink hop, about a
// microsecond for a PCIe or InfiniBand hop (switch + serialisation). They matter only for small
// messages; the collective model adds them per ring step.
constexpr SimTime kNvlinkHopLatency{500000};      // 0.5 us GPU -> NVSwitch
constexpr SimTime kPcieHopLatency{1000000};       // 1 us per PCIe hop
constexpr SimTime kIbHopLatency{1000000};         // 1 us NIC <-> switch

struct NodeRecipe {
  int gpus;
  BytesPerSecond nvlink;
  BytesPerSecond pcie;
  BytesPerSecond nic;
};

void add_node(Topology& t, int node, const NodeRecipe& r, VertexId network_switch, bool with_nics) {
  const std::string p = "n" + std::to_string(node) + ".";
  VertexId nvswitch = t.add_device(DeviceKind::nvswitch, p + "nvswitch", node);
  VertexId cpu = t.add_device(DeviceKind::cpu, p + "cpu", node);
  for (int g = 0; g < r.gpus; ++g) {
    VertexId gpu = t.add_device(DeviceKind::gpu, p + "gpu" + std::to_string(g), node);
    t.add_link(gpu, nvswitch, LinkKind::nvlink, r.nvlink, kNvlinkHopLatency);
    VertexId pcie = t.add_device(DeviceKind::pcie_switch, p + "pcie" + std::to_string(g), node);
    t.add_link(gpu, pcie, LinkKind::pcie, r.pcie, kPcieHopLatency);
    t.add_link(pcie, cpu, LinkKind::pcie, r.pcie, kPcieHopLatency);
    if (with_nics) {
      VertexId nic = t.add_device(DeviceKind::nic, p + "nic" + std::to_string(g), node);
      t.add_link(pcie, nic, LinkKind::pcie, r.pcie, kPcieHopLatency);
      t.add_link(nic, network_switch, LinkKind::infiniband, r.nic, kIbHopLatency);
    }
  }
}

Topology build_nodes(const NodeRecipe& r, int nodes) {
  Topology t;
  VertexId ib = 0;
  if (nodes > 1) ib = t.add_device(DeviceKind::network_switch, "ib.switch", -1);
  for (int n = 0; n < nodes; ++n) add_node(t, n, r, ib, nodes > 1);
  return t;
}

}  // namespace

const std::vector<ClusterPreset>& cluster_presets() {
  static const std::vector<ClusterPreset> kPresets = {
      {"hgx_h100_2gpu", "2x H100 SXM on NVSwitch (450 GB/s per direction per GPU), one node", "h100_sxm", 2, false},
      {"dgx_h100", "DGX H100: 8x H100 SXM, NVSwitch, 8x ConnectX-7 NDR 400G (one per GPU)", "h100_sxm", 8, true},
      {"dgx_h200", "DGX H200: 8x H200, NVSwitch, 8x ConnectX-7 NDR 400G (one per GPU)", "h200", 8, true},
      {"dgx_a100", "DGX A100: 8x A100 SXM 80GB, NVSwitch, 8x ConnectX-6 HDR 200G (one per GPU)", "a100_sxm_80gb", 8, true},
      {"single_h100", "one H100 SXM", "h100_sxm", 1, false},
  };
  return kPresets;
}

const ClusterPreset& find_cluster_preset(const std::string& name) {
  for (const auto& p : cluster_presets()) {
    if (p.name == name) return p;
  }
  std::string list;
  for (const auto& p : cluster_presets()) list += (list.empty() ? "" : ", ") + p.name;
  throw UserError("unknown cluster preset '" + name + "'; valid presets: " + list);
}

Topology build_preset(const std::string& name, int nodes) {
  const ClusterPreset& p = find_cluster_preset(name);
  if (nodes < 1) throw UserError("cluster '" + name + "': nodes must be at least 1");
  if (nodes > 1 && !p.multi_node) throw UserError("cluster preset '" + name + "' is a single node; use dgx_h100, dgx_h200 or dgx_a100 for several nodes");
  if (p.gpu == "a100_sxm_80gb") return build_nodes({p.gpus_per_node, kNvlink3PerGpu, kPcieGen4x16, kIbHdr}, nodes);
  return build_nodes({p.gpus_per_node, kNvlink4PerGpu, kPcieGen5x16, kIbNdr}, nodes);
}

}  // namespace cs::topo
