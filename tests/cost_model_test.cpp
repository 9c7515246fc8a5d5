// Compute roofline against its formula (collectives: network_test.cpp).
#include <gtest/gtest.h>

#include "cost_models/compute_model.h"

namespace cs {
namespace {

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
