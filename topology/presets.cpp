// Cluster presets and the builder that turns a ClusterSpec into a Topology. Figures are per
// direction.
//   H100/H200 SXM (NVLink4): 18 links x 25 GB/s = 450 GB/s per GPU (900 GB/s bidirectional).
//   A100 SXM (NVLink3): 12 links x 25 GB/s = 300 GB/s per GPU (600 GB/s bidirectional).
//   H100 PCIe NVLink bridge: 600 GB/s bidirectional per pair = 300 GB/s per direction.
//   PCIe x16: Gen5 32 GT/s = 63 GB/s, Gen4 31.5 GB/s (128b/130b).
//   InfiniBand NDR 400 Gb/s = 50 GB/s, HDR 200 Gb/s = 25 GB/s; RoCE 400GbE = 50 GB/s.
//   Two-socket servers: 4 UPI links x 16 GT/s x 2 B ~ 64 GB/s per direction (round figure).
// DGX H100: 8 GPUs, 4 NVSwitch chips, 8 ConnectX-7 (one per GPU, each GPU and its NIC under one
// PCIe Gen5 switch), rail-optimised fabric (DGX SuperPOD reference architecture, 32-node SUs).
// DGX A100: 8 GPUs, 6 NVSwitch chips, 8 ConnectX-6 HDR. Sources: NVIDIA DGX H100 / A100 user
// guides, DGX SuperPOD reference architecture.
// H800 (HGX H800, DeepSeek-V3's cluster): the H100 baseboard with NVLink cut to 8 links x 25 GB/s
// = 200 GB/s per direction (400 GB/s bidirectional), 8 ConnectX-7 400G InfiniBand NICs per node
// ("Insights into DeepSeek-V3", arXiv 2505.09343 sec. 4). The DeepSeek-V3 report (arXiv
// 2412.19437 sec. 3.2.2) measured 160 GB/s over NVLink and 50 GB/s over IB per GPU: 80% of the
// 200 GB/s nominal, the same share NCCL's model gives H100 (371 of 450 GB/s).
// B200 (DGX/HGX B200): NVLink 5, 18 links x 50 GB/s = 900 GB/s per direction (1.8 TB/s
// bidirectional), 2 NVSwitch chips, 8 ConnectX-7 400G (one per GPU) on PCIe Gen5 (DGX B200 user
// guide; HGX B200 datasheet).
// GB200 NVL72: 72 Blackwell GPUs in ONE NVLink domain (18 compute trays of 2 GB200 superchips,
// 9 NVLink switch trays; 1.8 TB/s bidirectional per GPU, 130 TB/s in all = 72 x 1.8), so the
// rack is one "node" here with 72 GPUs on one logical NVSwitch with NVLS (NVLink SHARP).
// Scale-out: one ConnectX-7 400G NIC per GPU (4 per compute tray), as DGX GB200 ships them;
// ConnectX-8 800G belongs to GB300 NVL72 (set `node: {nic_bandwidth: 800Gbps}` for it). The 36
// Grace CPUs carry no traffic of the job in this model (GPU-NIC traffic stays on each GPU's own
// PCIe path), so they are one CPU vertex.
// HGX B300 (Blackwell Ultra): 8 GPUs on NVLink 5 as B200 (NVLink Switch, 1.8 TB/s GPU-to-GPU, 14.4
// TB/s in all = 8 x 1.8) and 1.6 TB/s of networking: 8 ConnectX-8 SuperNICs of 800 Gb/s, one per
// GPU (NVIDIA's HGX B300 table, as reproduced by fibermall.com/blog/?p=17161; acecloud.ai's HGX
// B300 page: "8x ConnectX-8", "up to 800 Gb/s per GPU"). B300 and ConnectX-8 speak PCIe Gen6
// (glennklockwood.com/garden/processors/B300: "PCIe Gen6"): x16 at 64 GT/s = 128 GB/s per
// direction before the FLIT overhead, 242 of every 256 bytes payload: 121 GB/s. NVLS as B200.
// GB300 NVL72: the GB200 NVL72 rack (one 72-GPU NVLink 5 domain, 130 TB/s, 9 switch trays) with
// Blackwell Ultra GPUs and one ConnectX-8 800G per GPU (72 in all) on PCIe Gen6 (NVIDIA's GB300
// NVL72 figures as glennklockwood.com and vendordeep.com reproduce them: "72 ConnectX-8 NICs",
// "800 Gb/s" each; 18 compute trays of 4 GPUs and 2 Grace CPUs). As GB200 NVL72, one node here.
// Jobs on NVL72 racks (GB200 and GB300 alike). A rack is 18 compute trays of 4 GPUs in one NVLink
// domain, and a scheduler treats the domain as a hard boundary: Slurm's topology/block plugin
// places a job of up to one rack inside one domain, and a larger job in "segments" of trays that
// each stay inside one domain ("Unlock Exascale Performance on NVIDIA GB200 NVL72 with Slurm
// Topology-Aware Job Scheduling", NVIDIA technical blog: a segment of 16 nodes, i.e. 16 trays or
// 64 GPUs, for jobs of 128 GPUs and more). So here (placement.h): up to 72 GPUs, one domain of
// that many (8 GPUs: 2 trays; 64: 16 trays); above, whole racks of 72 where the count is a
// multiple of 72, else segments of 64 GPUs (16 trays), one per rack, which places the published
// Megatron-Bridge runs of 128 and 256 GPUs on DGX-GB200 and DGX-GB300. Each GPU keeps its NIC.
constexpr int kNvl72SegmentGpus = 64;  // 16 compute trays of 4 GPUs
// AWS p5.48xlarge: 8x H100 SXM on NVSwitch (900 GB/s bidirectional, as DGX H100, NVLS) and 3200
// Gb/s of EFA networking in 32 network cards of 100 Gb/s, four beside each GPU (AWS's P5 instance
// page; EC2 user guide "EFA configuration for P5 instances": 32 EFA interfaces). EFA is AWS's SRD
// over Ethernet: the Ethernet efficiency applies. AWS publishes no fabric topology beyond
// "non-blocking" UltraClusters: one non-blocking switch.
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "topology/cluster_spec.h"
#include "topology/placement.h"

namespace cs::topo {
namespace {

constexpr BytesPerSecond kNvlink4PerGpu{450e9};
constexpr BytesPerSecond kNvlink3PerGpu{300e9};
constexpr BytesPerSecond kNvlink5PerGpu{900e9};     // B200, GB200: 18 links x 50 GB/s per direction
constexpr BytesPerSecond kNvlinkH800PerGpu{200e9};  // H800: 8 links x 25 GB/s per direction
constexpr int kNvl72Gpus = 72;  // GB200 / GB300 NVL72: GPUs in one NVLink domain
constexpr BytesPerSecond kNvlinkBridgeH100{300e9};
constexpr BytesPerSecond kPcieGen5x16{63e9};
constexpr BytesPerSecond kPcieGen4x16{31.5e9};
constexpr BytesPerSecond kPcieGen6x16{121e9};  // 128 GB/s x 242/256 (FLIT payload)
constexpr BytesPerSecond kNdr{50e9};
constexpr BytesPerSecond kHdr{25e9};
constexpr BytesPerSecond kConnectX8{100e9};  // 800 Gb/s
constexpr BytesPerSecond kEfa100G{12.5e9};   // one p5 EFA network card: 100 Gb/s
constexpr int kP5EfaCards = 32;
constexpr BytesPerSecond kUpi{64e9};
// Hop latencies are uncalibrated round figures (sub-microsecond NVLink, about a microsecond for a
// PCIe or network hop). The collective model takes its per-step latencies from NCCL's tables;
// these only add to point-to-point transfers.
constexpr SimTime kNvlinkHopLatency{500000};
constexpr SimTime kPcieHopLatency{1000000};
constexpr SimTime kNetworkHopLatency{1000000};

NodeSpec dgx(int gpus, BytesPerSecond nvlink, bool nvls, BytesPerSecond pcie, BytesPerSecond nic) {
  NodeSpec n;
  n.gpus = gpus;
  n.intra = IntraNode::nvswitch;
  n.nvlink = nvlink;
  n.nvls = nvls;
  n.pcie = pcie;
  n.gpus_per_pcie_switch = 1;
  n.sockets = 2;
  n.inter_socket = kUpi;
  n.nics = gpus;
  n.nic = nic;
  return n;
}

NodeSpec pcie_box(bool bridges) {
  NodeSpec n;
  n.gpus = 8;
  n.intra = bridges ? IntraNode::nvlink_pairs : IntraNode::pcie;
  n.nvlink = kNvlinkBridgeH100;
  n.pcie = kPcieGen5x16;
  n.gpus_per_pcie_switch = 2;
  n.sockets = 2;
  n.inter_socket = kUpi;
  n.nics = 4;
  n.nic = kNdr;
  return n;
}

std::vector<ClusterSpec> make_presets() {
  std::vector<ClusterSpec> p;
  auto add = [&](std::string name, std::string gpu, std::string description, NodeSpec node) {
    ClusterSpec c;
    c.name = std::move(name);
    c.gpu = std::move(gpu);
    c.description = std::move(description);
    c.node = node;
    p.push_back(std::move(c));
  };
  NodeSpec one = dgx(1, kNvlink4PerGpu, false, kPcieGen5x16, kNdr);
  one.intra = IntraNode::pcie;
  one.nics = 0;
  one.sockets = 1;
  add("single_h100", "h100_sxm", "one H100 SXM", one);
  NodeSpec two = dgx(2, kNvlink4PerGpu, false, kPcieGen5x16, kNdr);
  two.nics = 0;
  add("hgx_h100_2gpu", "h100_sxm",
      "2x H100 SXM on NVSwitch (450 GB/s per direction per GPU), one node", two);
  add("dgx_h100", "h100_sxm",
      "DGX H100: 8x H100 SXM, NVSwitch with NVLS, 8x ConnectX-7 NDR 400G (one per GPU), "
      "rail-optimised InfiniBand",
      dgx(8, kNvlink4PerGpu, true, kPcieGen5x16, kNdr));
  NodeSpec roce = dgx(8, kNvlink4PerGpu, true, kPcieGen5x16, kNdr);
  roce.network = LinkKind::ethernet;
  add("dgx_h100_roce", "h100_sxm", "DGX H100 with 8x 400GbE RoCE NICs, rail-optimised Ethernet",
      roce);
  // TorchTitan's published H100 runs: "400 Gb/s RDMA per GPU" without naming the fabric; NDR
  // InfiniBand as on DGX H100 is assumed.
  add("grand_teton_h100", "h100_sxm_96gb_500w",
      "Meta Grand Teton: 8x H100 SXM5 96GB HBM2e at a 500 W power limit, NVSwitch with NVLS, one "
      "400 Gb/s RDMA NIC per GPU (NDR InfiniBand assumed), rail-optimised",
      dgx(8, kNvlink4PerGpu, true, kPcieGen5x16, kNdr));
  add("dgx_h200", "h200",
      "DGX H200: 8x H200, NVSwitch with NVLS, 8x ConnectX-7 NDR 400G (one per GPU), rail-optimised "
      "InfiniBand",
      dgx(8, kNvlink4PerGpu, true, kPcieGen5x16, kNdr));
  add("dgx_a100", "a100_sxm_80gb",
      "DGX A100: 8x A100 SXM 80GB, NVSwitch, 8x ConnectX-6 HDR 200G (one per GPU), rail-optimised "
      "InfiniBand",
      dgx(8, kNvlink3PerGpu, false, kPcieGen4x16, kHdr));
  add("pcie_8x_h100", "h100_pcie",
      "8x H100 PCIe, 2 GPUs per PCIe Gen5 switch, 2 sockets, 4x NDR 400G NICs (one per switch)",
      pcie_box(false));
  add("nvlink_pairs_8x_h100", "h100_pcie",
      "8x H100 PCIe with NVLink bridges joining GPU pairs (300 GB/s per direction), otherwise as "
      "pcie_8x_h100",
      pcie_box(true));
  add("hgx_h800", "h800",
      "HGX H800 (DeepSeek-V3's nodes): 8x H800, NVLink cut to 200 GB/s per direction per GPU, "
      "NVSwitch with NVLS, 8x ConnectX-7 NDR 400G, rail-optimised InfiniBand",
      dgx(8, kNvlinkH800PerGpu, true, kPcieGen5x16, kNdr));
  add("dgx_b200", "b200",
      "DGX B200: 8x B200, NVLink 5 (900 GB/s per direction per GPU), NVSwitch with NVLS, 8x "
      "ConnectX-7 NDR 400G (one per GPU), rail-optimised InfiniBand",
      dgx(8, kNvlink5PerGpu, true, kPcieGen5x16, kNdr));
  NodeSpec nvl72 = dgx(kNvl72Gpus, kNvlink5PerGpu, true, kPcieGen5x16, kNdr);
  nvl72.sockets = 1;
  add("gb200_nvl72", "gb200",
      "GB200 NVL72 rack as one node: 72 Blackwell GPUs in one NVLink 5 domain (900 GB/s per "
      "direction per GPU, NVLS), 72x ConnectX-7 400G (one per GPU), rail-optimised InfiniBand "
      "between racks; a job above one rack takes whole racks or 64 GPUs (16 trays) of each",
      nvl72);
  add("hgx_b300", "b300",
      "HGX B300: 8x B300 (Blackwell Ultra), NVLink 5 (900 GB/s per direction per GPU), NVSwitch "
      "with NVLS, 8x ConnectX-8 800G (one per GPU) on PCIe Gen6, rail-optimised",
      dgx(8, kNvlink5PerGpu, true, kPcieGen6x16, kConnectX8));
  NodeSpec gb300 = dgx(kNvl72Gpus, kNvlink5PerGpu, true, kPcieGen6x16, kConnectX8);
  gb300.sockets = 1;
  add("gb300_nvl72", "gb300",
      "GB300 NVL72 rack as one node: 72 Blackwell Ultra GPUs in one NVLink 5 domain (900 GB/s per "
      "direction per GPU, NVLS), 72x ConnectX-8 800G (one per GPU), rail-optimised between racks; "
      "a job above one rack takes whole racks or 64 GPUs (16 trays) of each",
      gb300);
  NodeSpec p5 = dgx(8, kNvlink4PerGpu, true, kPcieGen5x16, kEfa100G);
  p5.nics = kP5EfaCards;
  p5.network = LinkKind::ethernet;
  ClusterSpec& aws = p.emplace_back();
  aws.name = "p5_48xlarge";
  aws.gpu = "h100_sxm";
  aws.description =
      "AWS p5.48xlarge: 8x H100 SXM, NVSwitch with NVLS, 32x 100 Gb/s EFA (3200 Gb/s, four per "
      "GPU), one non-blocking fabric";
  aws.node = p5;
  aws.fabric.kind = FabricKind::single_switch;
  return p;
}

struct Builder {
  const ClusterSpec& spec;
  Topology t;
  std::vector<std::vector<VertexId>> nics;  // [node][nic]

  void add_node(int node) {
    const NodeSpec& n = spec.node;
    const std::string p = "n" + std::to_string(node) + ".";
    std::vector<VertexId> cpus;
    for (int c = 0; c < n.sockets; ++c)
      cpus.push_back(t.add_device(DeviceKind::cpu, p + "cpu" + std::to_string(c), node));
    for (int c = 1; c < n.sockets; ++c)
      t.add_link(cpus[c - 1], cpus[c], LinkKind::socket, n.inter_socket, kPcieHopLatency);
    const int switches = (n.gpus + n.gpus_per_pcie_switch - 1) / n.gpus_per_pcie_switch;
    std::vector<VertexId> pcie;
    for (int s = 0; s < switches; ++s) {
      pcie.push_back(t.add_device(DeviceKind::pcie_switch, p + "pcie" + std::to_string(s), node));
      t.add_link(pcie[s], cpus[static_cast<size_t>(s * n.sockets / switches)], LinkKind::pcie,
                 n.pcie, kPcieHopLatency);
    }
    VertexId nvswitch = 0;
    if (n.intra == IntraNode::nvswitch && n.gpus > 1) {
      nvswitch = t.add_device(DeviceKind::nvswitch, p + "nvswitch", node, n.nvls);
    }
    std::vector<VertexId> gpus;
    for (int g = 0; g < n.gpus; ++g) {
      gpus.push_back(t.add_device(DeviceKind::gpu, p + "gpu" + std::to_string(g), node));
      t.add_link(gpus[g], pcie[g / n.gpus_per_pcie_switch], LinkKind::pcie, n.pcie,
                 kPcieHopLatency);
      if (n.intra == IntraNode::nvswitch && n.gpus > 1)
        t.add_link(gpus[g], nvswitch, LinkKind::nvlink, n.nvlink, kNvlinkHopLatency);
      if (n.intra == IntraNode::nvlink_pairs && g % 2 == 1)
        t.add_link(gpus[g - 1], gpus[g], LinkKind::nvlink, n.nvlink, kNvlinkHopLatency);
    }
    if (spec.nodes == 1) return;  // a lone server's NICs carry no traffic of the job
    nics.emplace_back();
    for (int i = 0; i < n.nics; ++i) {
      nics.back().push_back(t.add_device(DeviceKind::nic, p + "nic" + std::to_string(i), node));
      t.add_link(pcie[static_cast<size_t>(i * switches / n.nics)], nics.back().back(),
                 LinkKind::pcie, n.pcie, kPcieHopLatency);
    }
  }

  void add_fabric() {
    const NodeSpec& n = spec.node;
    const FabricSpec& f = spec.fabric;
    if (spec.nodes == 1) return;
    if (f.kind == FabricKind::single_switch) {
      const VertexId sw = t.add_device(DeviceKind::network_switch, "fabric.switch", -1);
      for (const auto& node_nics : nics) {
        for (VertexId nic : node_nics) t.add_link(nic, sw, n.network, n.nic, kNetworkHopLatency);
      }
      return;
    }
    const int leaves_per_group = (spec.nodes + f.nodes_per_leaf - 1) / f.nodes_per_leaf;
    const bool rails = f.kind == FabricKind::rail_optimized;
    // rail_optimized: one leaf per (rail, node group), one NIC of each node on it.
    // fat_tree: one leaf per node group, every NIC of its nodes on it.
    const int groups = rails ? n.nics : 1;
    const int leaf_count = groups * leaves_per_group;
    const int nics_per_leaf_port_group = rails ? 1 : n.nics;
    std::vector<VertexId> leaves;
    for (int g = 0; g < groups; ++g) {
      for (int l = 0; l < leaves_per_group; ++l) {
        const std::string name = rails ? "rail" + std::to_string(g) + ".leaf" + std::to_string(l)
                                       : "leaf" + std::to_string(l);
        leaves.push_back(t.add_device(DeviceKind::network_switch, name, -1));
      }
    }
    for (int node = 0; node < spec.nodes; ++node) {
      for (int i = 0; i < n.nics; ++i) {
        const int leaf = (rails ? i * leaves_per_group : 0) + node / f.nodes_per_leaf;
        t.add_link(nics[node][i], leaves[leaf], n.network, n.nic, kNetworkHopLatency);
      }
    }
    if (leaf_count == 1) return;
    const VertexId spine = t.add_device(DeviceKind::network_switch, "fabric.spine", -1);
    const BytesPerSecond uplink{f.nodes_per_leaf * nics_per_leaf_port_group * n.nic.value /
                                f.oversubscription};
    for (VertexId leaf : leaves) t.add_link(leaf, spine, n.network, uplink, kNetworkHopLatency);
  }
};

}  // namespace

std::string_view to_string(IntraNode k) {
  switch (k) {
    case IntraNode::nvswitch:
      return "nvswitch";
    case IntraNode::nvlink_pairs:
      return "nvlink_pairs";
    case IntraNode::pcie:
      return "pcie";
  }
  return "?";
}

std::string_view to_string(FabricKind k) {
  switch (k) {
    case FabricKind::single_switch:
      return "single_switch";
    case FabricKind::rail_optimized:
      return "rail_optimized";
    case FabricKind::fat_tree:
      return "fat_tree";
  }
  return "?";
}

namespace {

// The presets whose nodes have NICs, comma-separated (the ones a multi-node cluster starts from).
std::string multi_node_presets() {
  std::string list;
  for (const auto& p : cluster_presets()) {
    if (p.node.nics > 0) list += (list.empty() ? "" : ", ") + p.name;
  }
  return list;
}

}  // namespace

void validate(const ClusterSpec& c) {
  const NodeSpec& n = c.node;
  auto fail = [&](const std::string& field, const std::string& what) {
    throw UserError("cluster '" + c.name + "': " + field + " " + what);
  };
  if (c.nodes < 1) fail("nodes", "must be at least 1");
  if (n.gpus < 1) fail("node.gpus", "must be at least 1");
  if (n.intra == IntraNode::nvlink_pairs && n.gpus % 2 != 0)
    fail("node.intra", "nvlink_pairs needs an even number of GPUs per node");
  if (n.intra != IntraNode::pcie && n.gpus > 1 && n.nvlink.value <= 0)
    fail("node.nvlink_bandwidth", "must be positive");
  if (n.pcie.value <= 0) fail("node.pcie_bandwidth", "must be positive");
  if (n.gpus_per_pcie_switch < 1) fail("node.gpus_per_pcie_switch", "must be at least 1");
  if (n.sockets < 1) fail("node.sockets", "must be at least 1");
  if (n.sockets > 1 && n.inter_socket.value <= 0)
    fail("node.inter_socket_bandwidth", "must be positive with several sockets");
  if (c.nodes > 1) {
    if (n.nics < 1)
      fail("nodes", "can only exceed 1 when nodes have NICs (node.nics; multi-node presets: " +
                        multi_node_presets() + ")");
    if (n.nic.value <= 0) fail("node.nic_bandwidth", "must be positive");
    if (n.network != LinkKind::infiniband && n.network != LinkKind::ethernet)
      fail("node.network", "must be infiniband or ethernet");
    if (c.fabric.nodes_per_leaf < 1) fail("fabric.nodes_per_leaf", "must be at least 1");
    if (!(c.fabric.oversubscription >= 1.0))
      fail("fabric.oversubscription", "must be at least 1 (downlink : uplink)");
  }
}

Topology build_cluster(const ClusterSpec& spec) {
  validate(spec);
  Builder b{spec, {}, {}};
  b.add_node(0);
  // Every node is built alike: room for all of them, plus two entries per NIC for the fabric (its
  // switches and uplinks are fewer), so that the device and link arrays are never moved: a move
  // copies every vertex's edge list (Mixtral 8x7B at 131,072 GPUs: 1.88 -> 1.81 s).
  const auto nodes = static_cast<size_t>(spec.nodes);
  const size_t fabric = 2 * nodes * static_cast<size_t>(spec.node.nics) + 1024;
  b.t.reserve(b.t.device_count() * nodes + fabric, b.t.link_count() / 2 * nodes + 2 * fabric);
  for (int node = 1; node < spec.nodes; ++node) b.add_node(node);
  b.add_fabric();
  return std::move(b.t);
}

const std::vector<ClusterSpec>& cluster_presets() {
  static const std::vector<ClusterSpec> kPresets = make_presets();
  return kPresets;
}

const ClusterSpec& find_cluster_preset(const std::string& name) {
  for (const auto& p : cluster_presets()) {
    if (p.name == name) return p;
  }
  std::string list;
  for (const auto& p : cluster_presets()) list += (list.empty() ? "" : ", ") + p.name;
  throw UserError("unknown cluster preset '" + name + "'; valid presets: " + list);
}

ClusterSpec preset_with_nodes(const std::string& name, int nodes) {
  ClusterSpec c = find_cluster_preset(name);
  if (nodes < 1) throw UserError("cluster '" + name + "': nodes must be at least 1");
  if (nodes > 1 && c.node.nics == 0) {
    throw UserError("cluster preset '" + name +
                    "' is a single machine; multi-node presets: " + multi_node_presets());
  }
  c.nodes = nodes;
  return c;
}

namespace {

// The GPUs a job above one node takes of each node, on presets whose node is a rack-scale NVLink
// domain (0: whole nodes only).
int segment_gpus(const std::string& name) {
  return name == "gb200_nvl72" || name == "gb300_nvl72" ? kNvl72SegmentGpus : 0;
}

}  // namespace

std::optional<ClusterSpec> preset_for_gpus(const std::string& name, int gpus) {
  const ClusterSpec& preset = find_cluster_preset(name);
  const int per_node = preset.node.gpus;
  if (gpus <= per_node) return preset_with_nodes(name, 1);
  if (gpus % per_node == 0) return preset_with_nodes(name, gpus / per_node);
  const int segment = segment_gpus(name);
  if (segment <= 0 || gpus % segment != 0) return std::nullopt;
  ClusterSpec c = preset_with_nodes(name, gpus / segment);
  c.node.nics = segment * preset.node.nics / per_node;  // the NICs of the trays the job holds
  c.node.gpus = segment;
  return c;
}

std::string placement_rule(const std::string& name) {
  std::string rule = std::to_string(find_cluster_preset(name).node.gpus) + " GPUs each";
  if (segment_gpus(name) > 0)
    rule += ", or " + std::to_string(segment_gpus(name)) + " GPUs of each in one NVLink domain";
  return rule;
}

}  // namespace cs::topo
