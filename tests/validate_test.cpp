// Predicting published measurements: vTrain's 1,440 Megatron-DeepSpeed iterations on 8x A100.
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.h"
#include "test_paths.h"
#include "validate/table_validation.h"

namespace cs {
namespace {

TEST(VTrainIterations, FewGlobalFactorsFittedOnHalfPredictTheOtherHalf) {
  const auto rows = validate::read_vtrain_table(cs::test_paths::source_dir() +
                                                "/validate/data/vtrain_a100_single_node.csv");
  ASSERT_EQ(rows.size(), 1440u);
  const auto parts = validate::simulate_rows(rows, 2);
  std::vector<size_t> train, test;
  validate::split_half(parts, 42, train, test);
  ASSERT_EQ(train.size() + test.size(), 1440u);  // every row simulates
  const validate::TableFit tf = validate::fit_with_gemm_curve(rows, train, 2);
  const validate::Factors& f = tf.factors;
  const auto held = validate::errors(rows, tf.parts, f, test);
  const auto untuned = validate::errors(rows, parts, validate::Factors{}, test);
  std::printf(
      "vTrain single node: held-out MAPE %.2f%% (default model %.2f%%), median %.2f%%, worst "
      "%.1f%%\n",
      held.mape, untuned.mape, held.median, held.worst);
  static_assert(validate::kFactorCount + 1 <= 10,
                "the issue allows at most 10 fitted parameters (factors + GEMM curve)");
  // The target: at most 8% (vTrain reports 8.37%). This model reaches 7.94% on seed 42
  // (8.0-8.3% on other seeds: docs/user-guide/validate-and-calibrate.md), so the bound has little
  // slack, on purpose.
  EXPECT_LE(held.mape, 8.0);
  // The fitting half's choice among the candidates (fitting-half MAPE 8.08% at 8 GFLOP against
  // 8.13-8.19% at 0.5-4 GFLOP and 8.17% at 16): a change of curve choice shows up here first.
  EXPECT_DOUBLE_EQ(tf.gemm_half_flops, 8e9);
  // Fitting must beat the untuned defaults (35.2% held-out) by far, not by luck.
  EXPECT_LT(held.mape, untuned.mape / 3);
  // The fitted factors are physical. The fit is non-negative least squares, so "each factor >= 0"
  // could not fail; what it must show instead: GEMM and memory-bound times scale down from the
  // untuned defaults, which assume FlashAttention-era efficiencies (0.853 and 0.618 on seed 42),
  // and every overhead this table can see is positive, none clamped to 0: per kernel, per
  // collective call, per step and per tensor-parallel hop (36.7 us, 10.6 us, 5.75 ms, 28.4 us).
  // (a_comm does fit to 0: docs/user-guide/validate-and-calibrate.md says why.)
  EXPECT_LT(f.v[0], 1.0);  // a_gemm
  EXPECT_LT(f.v[2], 1.0);  // a_mem
  EXPECT_GT(f.v[3], 0.0);  // t_kernel
  EXPECT_GT(f.v[5], 0.0);  // t_call
  EXPECT_GT(f.v[6], 0.0);  // t_step
  EXPECT_GT(f.v[7], 0.0);  // t_hop
}

TEST(VTrainIterations, AMalformedRowNamesItsLine) {
  const std::string path = std::string(testing::TempDir()) + "/bad_table.csv";
  {
    std::ofstream f(path);
    f << "# header\n8,32,4,1024,16,24,1024,2,2,2,219.7\n8,32,4,1024,16,24\n";
  }
  try {
    validate::read_vtrain_table(path);
    ADD_FAILURE() << "a short row should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              path +
                  ":3: expected 11 comma-separated columns (GPUs, global batch, micro batch, "
                  "hidden, heads, layers, sequence, TP, DP, PP, iteration ms), got 6");
  }
}

}  // namespace
}  // namespace cs
