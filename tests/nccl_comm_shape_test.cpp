// cost::nccl_comm_shape: the communicator NCCL 2.28's tuning model sees for a group, derived from
// the topology (bench-collective --tuning-table prints NCCL's table for it).
#include "cost_models/nccl_comm_shape.h"

#include <gtest/gtest.h>

#include <numeric>

#include "topology/cluster_spec.h"

namespace cs::cost {
namespace {

std::vector<ir::RankId> first(int n) {
  std::vector<ir::RankId> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), ir::RankId{0});
  return r;
}

TEST(NcclCommShape, OneHopperNodeHasNvlsAndNcclsChannelCounts) {
  // One DGX H100: 8 GPUs on NVLS NVSwitches, NVLink 4 at 18 links x 25 GB/s = 450 GB/s per
  // direction (NVIDIA's H100 datasheet). NCCL's channels on it: 24 ring, 16 NVLS (an NCCL INFO
  // log).
  const topo::Topology t = topo::build_cluster(topo::preset_with_nodes("dgx_h100", 1));
  const NcclCommShape s = nccl_comm_shape(CollectiveModel(t), first(8));
  EXPECT_EQ(s.ranks, 8);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.arch, GpuArch::hopper);
  EXPECT_EQ(s.channels, 24);
  EXPECT_EQ(s.nvls_channels, 16);
  EXPECT_DOUBLE_EQ(s.nvls_bus_bw, 450);
  // A ring cannot move more than a GPU's NVLink egress; the tree graph is given the ring's rate.
  EXPECT_GT(s.ring_bus_bw, 0);
  EXPECT_LE(s.ring_bus_bw, 450);
  EXPECT_EQ(s.tree_bus_bw, s.ring_bus_bw);
}

TEST(NcclCommShape, AcrossNodesTwoChannelsPerNicAndNoNvls) {
  // Two DGX H100: the ring plan runs one channel per NIC (8 x 400 Gb/s = 50 GB/s each), NCCL two
  // per NIC: 16. NVLS is one node's: none here. The ring's bus rate is bounded by the 8 NICs' 400
  // GB/s.
  const topo::Topology t = topo::build_cluster(topo::preset_with_nodes("dgx_h100", 2));
  const NcclCommShape s = nccl_comm_shape(CollectiveModel(t), first(16));
  EXPECT_EQ(s.ranks, 16);
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.arch, GpuArch::hopper);
  EXPECT_EQ(s.channels, 16);
  EXPECT_EQ(s.nvls_channels, 0);
  EXPECT_EQ(s.nvls_bus_bw, 0);
  EXPECT_GT(s.ring_bus_bw, 0);
  EXPECT_LE(s.ring_bus_bw, 400);
}

TEST(NcclCommShape, AnAmpereNodeHasNoNvls) {
  // DGX A100: an Ampere GPU (NCCL's Ampere tables) on NVSwitch without NVLink SHARP (no NVLS).
  const topo::Topology t = topo::build_cluster(topo::preset_with_nodes("dgx_a100", 1));
  CollectiveParams a100;
  a100.arch = find_device("a100_sxm_80gb").arch;
  const NcclCommShape s = nccl_comm_shape(CollectiveModel(t, a100), first(8));
  EXPECT_EQ(s.arch, GpuArch::ampere);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.nvls_channels, 0);
}

}  // namespace
}  // namespace cs::cost
