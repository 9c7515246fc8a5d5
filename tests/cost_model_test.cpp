// Compute roofline and analytic ring collectives against their formulas.
#include <gtest/gtest.h>

#include "cost_models/collective_model.h"
#include "cost_models/compute_model.h"
#include "topology/topology.h"

namespace cs {
namespace {

TEST(CollectiveModel, RingAllReduceMatchesFormula) {
  const topo::Topology t = topo::build_preset("dgx_h100", 1);
  const cost::CollectiveModel model(t);
  const auto& p = model.params();
  // Inside a DGX H100 every ring hop is GPU -> NVSwitch -> GPU: two NVLink hops of 0.5 us, at
  // 450 GB/s x 0.824 (NCCL's 20.6 of 25 GB/s per link) = 370.8 GB/s.
  const double bw = 450e9 * 0.824;
  const SimTime hop = SimTime::from_us(1.0);
  for (int n : {2, 4, 8}) {
    std::vector<ir::RankId> ranks;
    for (int r = 0; r < n; ++r) ranks.push_back(static_cast<ir::RankId>(r));
    for (int64_t size : {int64_t{1} << 20, int64_t{64} << 20, int64_t{1} << 30}) {
      // Ring all-reduce: 2(n-1) steps, each rank sends 2(n-1)/n of the buffer.
      const double sent = 2.0 * (n - 1) / n * static_cast<double>(size);
      const SimTime expected = p.base_latency + SimTime{2 * (n - 1) * (p.step_latency + hop).ps} +
                               SimTime::from_seconds(sent / bw);
      EXPECT_EQ(model.time(ir::CollectiveType::all_reduce, Bytes{size}, ranks), expected) << "n=" << n << " size=" << size;
      // All-gather and reduce-scatter: n-1 steps, (n-1)/n of the buffer.
      const SimTime ag = p.base_latency + SimTime{(n - 1) * (p.step_latency + hop).ps} +
                         SimTime::from_seconds((n - 1.0) / n * static_cast<double>(size) / bw);
      EXPECT_EQ(model.time(ir::CollectiveType::all_gather, Bytes{size}, ranks), ag);
      EXPECT_EQ(model.time(ir::CollectiveType::reduce_scatter, Bytes{size}, ranks), ag);
    }
  }
  // At 1 GiB on 8 GPUs the bus bandwidth (algbw x 2(n-1)/n) approaches the ring bandwidth:
  // 2*7/8 * 2^30 / t, with t = 10 + 14*2 us + 1.879 GB / 370.8 GB/s = 5.105 ms -> 368 GB/s, the
  // ~370 GB/s NCCL's maintainers quote for 8x H100 ring all-reduce.
  std::vector<ir::RankId> eight{0, 1, 2, 3, 4, 5, 6, 7};
  const double t8 = model.time(ir::CollectiveType::all_reduce, Bytes{int64_t{1} << 30}, eight).seconds();
  EXPECT_NEAR(1.75 * (1 << 30) / t8 / 1e9, 368.0, 1.0);
}

TEST(CollectiveModel, CrossNodeRingsUseOneNicEach) {
  const topo::Topology t = topo::build_preset("dgx_h100", 2);
  const cost::CollectiveModel model(t);
  // Ranks 0 and 8 sit on different nodes, one NIC each: one ring, bound by the 50 GB/s NDR NIC
  // derated to 0.94 -> 47 GB/s.
  EXPECT_EQ(model.network_channels({0, 8}), 1);
  EXPECT_NEAR(model.ring_bandwidth({0, 8}).value, 47e9, 1e6);
  // All 16 GPUs: 8 NICs per node -> 8 rings, cross-node hops at 8 x 47 = 376 GB/s, so NVLink
  // (450 x 0.824 = 370.8 GB/s) becomes the bound again; per NIC that is 370.8 / 8 = 46.4 GB/s of
  // bus bandwidth, inside the 46-49 GB/s measured for NDR.
  std::vector<ir::RankId> all;
  for (ir::RankId r = 0; r < 16; ++r) all.push_back(r);
  EXPECT_EQ(model.network_channels(all), 8);
  EXPECT_NEAR(model.ring_bandwidth(all).value, 370.8e9, 1e6);
  EXPECT_EQ(model.time(ir::CollectiveType::all_reduce, Bytes{1 << 20}, {0}), SimTime{});
}

TEST(ComputeModel, RooflineTakesTheSlowerOfMathAndMemory) {
  const cost::ComputeModel m(cost::find_device("h100_sxm"));
  const auto& e = m.efficiency();
  // An 8192^3 BF16 GEMM: 2 * 8192^3 = 1.0995 TFLOP at 989.4 TFLOP/s x 0.80 x f/(f + 2e9).
  ir::ComputeOp g;
  g.op = ir::OpClass::gemm;
  g.dtype = ir::DType::bf16;
  g.flops = {2.0 * 8192.0 * 8192.0 * 8192.0};
  g.bytes = {3 * 8192LL * 8192LL * 2};
  const double eff = 0.80 * g.flops.value / (g.flops.value + 2e9);
  const double expected_s = g.flops.value / (989.4e12 * eff);
  EXPECT_EQ(m.time(g), e.launch_gap + SimTime::from_seconds(expected_s));
  // ~795 TFLOP/s achieved, the public cuBLAS figure for this shape.
  EXPECT_NEAR(g.flops.value / expected_s / 1e12, 790.0, 10.0);
  // A 1 GiB elementwise op is memory bound: 2^30 B / (3.35 TB/s x 0.80).
  ir::ComputeOp ew;
  ew.op = ir::OpClass::elementwise;
  ew.bytes = {int64_t{1} << 30};
  ew.flops = {1e6};
  EXPECT_EQ(m.time(ew), e.launch_gap + SimTime::from_seconds(1073741824.0 / (3.35e12 * 0.80)));
}

}  // namespace
}  // namespace cs
