// All-to-all (MoE dispatch and combine) times on DGX H100, inside one node and across two,
// against derivations from the collective model's own parameters (collective_algorithms.h,
// "direct all_to_all": S/n from every rank to every other at once, one phase, NCCL's ring/Simple
// step latency of the widest hop kind).
#include <gtest/gtest.h>

#include "cost_models/collective_model.h"
#include "cost_models/device_spec.h"
#include "driver/simulation.h"
#include "topology/cluster_spec.h"

namespace cs {
namespace {

// The size: Mixtral 8x7B's dispatch per rank and MoE layer in mixtral-8x7b-16xh100-ep8.yaml,
// 4096 tokens x top 2 x hidden 4096 x 2 B (bf16) = 67,108,864 B = 64 MiB (moe_test.cpp).
constexpr int64_t kBytes = int64_t{4096} * 2 * 4096 * 2;

std::vector<ir::RankId> first_ranks(ir::RankId n) {
  std::vector<ir::RankId> r(n);
  for (ir::RankId i = 0; i < n; ++i) r[i] = i;
  return r;
}

TEST(AllToAll, EightH100InsideOneNodeOverNvlink) {
  // One DGX H100: GPU g's only NVLink is g -> NVSwitch -> g' (450 GB/s per direction, NVLink
  // efficiency 1.0); the PCIe path through the CPU is longer and unused. Each of the 8 ranks sends
  // S/8 to each of the 7 others: its uplink to the switch and each downlink carry 7/8 S.
  // The SMs drive intra-node hops, so the sender's uplink also pays one unhidden pass over the
  // buffer at pass_efficiency 0.54 x HBM 3.35 TB/s = 1.809 TB/s, charged as extra weight
  // 450e9 / 1.809e12 = 0.248756 per unit on that link: the uplink is the bottleneck,
  //   S x (7/8 / 450e9 + 1 / 1.809e12) = 58,720,256 / 450e9 + 67,108,864 / 1.809e12
  //   = 130.4895 us + 37.0972 us = 167.5867 us.
  // Latency: launch overhead 5.6 us + one NCCL 2.28 ring/Simple step on NVLink, 3.4 us = 9.0 us.
  // Total 176.5867 us (algbw 380 GB/s).
  const topo::Topology one = topo::build_preset("dgx_h100", 1);
  const cost::CollectiveModel model(one, driver::collective_params(cost::find_device("h100_sxm")));
  const auto c = model.choose(ir::CollectiveType::all_to_all, Bytes{kBytes}, first_ranks(8));
  ASSERT_NE(c.plan, nullptr);
  EXPECT_EQ(c.plan->algorithm, cost::Algorithm::direct);
  EXPECT_EQ(c.plan->protocol, cost::Protocol::simple);
  EXPECT_NEAR(c.plan->latency.us(), 5.6 + 3.4, 1e-6);
  const double bandwidth_us = 7.0 / 8.0 * kBytes / 450e9 * 1e6 + kBytes / (0.54 * 3.35e12) * 1e6;
  EXPECT_NEAR(bandwidth_us, 167.5867, 1e-4);
  EXPECT_NEAR(c.time.us(), 9.0 + bandwidth_us, 1e-3);
}

TEST(AllToAll, SixteenH100AcrossTwoNodesOverInfiniBand) {
  // Two DGX H100 on a rail-optimised fabric (GPU g and NIC g under PCIe switch g; NIC g on rail
  // g's leaf; a spine joins the rails). Each of the 16 ranks sends S/16 to each of the 15 others.
  // Routes (shortest, GPUs never transit): to the peer on its own rail, own NIC; to another rail
  // on the same socket, through the CPU to that rail's NIC; to the other socket, own NIC, then the
  // spine. Every NIC thus carries the traffic of its rail: S/16 from each of the 8 GPUs of its
  // node to the remote GPU of its rail = 8/16 S, as PXN would route it. InfiniBand NDR
  // 50 GB/s x 0.95 achievable = 47.5 GB/s is the narrowest link on that path (PCIe Gen5 63 GB/s
  // x 0.76 = 47.9 GB/s; an NVLink uplink's (7/16 + 0.2488) / 450e9 per byte is a seventh), so
  //   S x (8/16) / 47.5e9 = 33,554,432 / 47.5e9 = 706.4091 us.
  // Latency: launch overhead 5.6 us + one ring/Simple step on the network, 14.0 us = 19.6 us.
  // Total 726.0091 us, 4.1x the one-node time: the 16-GPU all-to-all is NIC-bound.
  const topo::Topology two = topo::build_preset("dgx_h100", 2);
  const cost::CollectiveModel model(two, driver::collective_params(cost::find_device("h100_sxm")));
  const auto c = model.choose(ir::CollectiveType::all_to_all, Bytes{kBytes}, first_ranks(16));
  ASSERT_NE(c.plan, nullptr);
  EXPECT_EQ(c.plan->algorithm, cost::Algorithm::direct);
  EXPECT_NEAR(c.plan->latency.us(), 5.6 + 14.0, 1e-6);
  const double bandwidth_us = kBytes / 2.0 / 47.5e9 * 1e6;
  EXPECT_NEAR(bandwidth_us, 706.4091, 1e-4);
  EXPECT_NEAR(c.time.us(), 19.6 + bandwidth_us, 1e-3);
  // Every IB link between a NIC and its leaf carries 8/16 of a buffer, both ways: 2 nodes x 8
  // NICs x 2 directions = 32 links (the spine's links are wider than 50 GB/s).
  int ib_half = 0;
  for (const auto& load : c.plan->phases.at(0).loads) {
    const auto& link = two.link(load.link);
    if (link.kind == topo::LinkKind::infiniband && link.bandwidth.value == 50e9) {
      EXPECT_NEAR(load.bytes, 0.5, 1e-12) << two.link_name(load.link);
      ++ib_half;
    }
  }
  EXPECT_EQ(ib_half, 32);
}

}  // namespace
}  // namespace cs
