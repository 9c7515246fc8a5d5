// Compute roofline against its formula (collectives: network_test.cpp).
#include <gtest/gtest.h>

#include "common/error.h"
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

namespace cs {
namespace {

TEST(EfficiencyTables, CurveInterpolatesInLogSizeAndHoldsBeyondItsEnds) {
  // Points at 1 MiB (0.5) and 16 MiB (0.9): 4 MiB is half-way in log2 (2 of 4 doublings) -> 0.7.
  const cost::EfficiencyCurve c({{16.0 * (1 << 20), 0.9}, {1 << 20, 0.5}});
  EXPECT_DOUBLE_EQ(c.at(4 << 20), 0.7);
  EXPECT_DOUBLE_EQ(c.at(1024), 0.5);
  EXPECT_DOUBLE_EQ(c.at(1e12), 0.9);
}

TEST(EfficiencyTables, GemmGridIsTrilinearInLogShape) {
  // eff = 0.1 a + 0.01 b + 0.001 c at m = 2^(7+a), n = 2^(7+b), k = 2^(7+c) for a, b, c in {0, 2}:
  // linear in log2 of each dimension, so trilinear interpolation reproduces it exactly between
  // the corners, e.g. m = 256, n = 128, k = 512 (a = 1, b = 0, c = 2) -> 0.1 + 0.002 = 0.102.
  std::vector<cost::GemmPoint> points;
  for (int a : {0, 2}) {
    for (int b : {0, 2}) {
      for (int c : {0, 2})
        points.push_back({int64_t{128} << a, int64_t{128} << b, int64_t{128} << c,
                          0.2 + 0.1 * a + 0.01 * b + 0.001 * c});
    }
  }
  const cost::GemmEfficiencyGrid grid(points);
  EXPECT_NEAR(grid.at(256, 128, 512), 0.2 + 0.1 + 0.002, 1e-12);
  EXPECT_NEAR(grid.at(128, 128, 128), 0.2, 1e-12);
  EXPECT_NEAR(grid.at(4096, 64, 512), 0.2 + 0.2 + 0.002, 1e-12);  // clamped to the grid's edges
  points.pop_back();
  EXPECT_THROW(cost::GemmEfficiencyGrid{points}, UserError);
}

}  // namespace
}  // namespace cs
