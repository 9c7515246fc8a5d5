// calibrate --backend cuda keeps a framework's attention from the shipped profile
// (validate::keep_published_attention): the executor's own attention kernel is not the framework's.
#include <gtest/gtest.h>

#include "validate/calibration.h"

namespace cs::validate {
namespace {

TEST(KeepPublishedAttention, AttentionAndItsSourcesComeFromThePublishedProfileTheRestStays) {
  cost::Profile measured;
  measured.compute.attention = 0.5;
  measured.compute.attention_curve = cost::EfficiencyCurve({{1e6, 0.1}, {1e9, 0.4}});
  measured.compute.memory_curve = cost::EfficiencyCurve({{1 << 20, 0.6}});
  measured.sources = {"GEMM tables: measured"};
  cost::Profile published;
  published.compute.attention = 0.35;
  published.compute.attention_curve = cost::EfficiencyCurve({{1e9, 0.2}, {1e12, 0.7}});
  published.compute.attention_curves[ir::DType::bf16] = cost::EfficiencyCurve({{1e9, 0.3}});
  published.compute.memory_curve = cost::EfficiencyCurve({{1 << 20, 0.9}});
  published.sources = {"Attention: PyTorch SDPA, measured", "Memory: streaming kernels",
                       "Peaks: the datasheet"};

  keep_published_attention(measured, published);
  EXPECT_EQ(measured.compute.attention, 0.35);
  EXPECT_EQ(measured.compute.attention_curve.points(), published.compute.attention_curve.points());
  ASSERT_EQ(measured.compute.attention_curves.size(), 1u);
  EXPECT_EQ(measured.compute.attention_curves.at(ir::DType::bf16).points(),
            published.compute.attention_curves.at(ir::DType::bf16).points());
  // Memory is the calibration's own; of the published sources only attention's and the peaks' join.
  EXPECT_EQ(measured.compute.memory_curve.at(1 << 20), 0.6);
  const std::vector<std::string> sources{
      "GEMM tables: measured", "Attention: PyTorch SDPA, measured", "Peaks: the datasheet"};
  EXPECT_EQ(measured.sources, sources);
}

}  // namespace
}  // namespace cs::validate
