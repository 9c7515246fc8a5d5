// The transcription behind validate/suites/beyond_bound/nemo_long_sequence_cp_h100_b200.yaml: the
// published TFLOP/s per GPU become tokens/s per GPU through NeMo's FLOP formula of the time, and
// each row's layout is its TP x PP x DP x CP.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "test_paths.h"
#include "validate/suite_data.h"

namespace cs {
namespace {

const std::string kSource = cs::test_paths::source_dir();

double column(const validate::DataRow& row, const char* name) {
  return std::stod(row.columns.at(name));
}

std::vector<validate::DataRow> rows() {
  return validate::read_csv_rows(
      kSource + "/validate/data/nemo_long_sequence_cp_h100_b200.csv",
      {"system", "model", "seq_k", "gpus", "batch", "tflops_without_cp", "tp", "pp", "dp", "cp",
       "tflops_with_cp", "gpus_run", "seq", "tps_per_gpu_derived"});
}

// NeMo's llama2 / llama3 formula (nemo/utils/flops_formulas.py before August 2025), per token:
// L h^2 (12 + 12 g / a + 18 f / h + 12 s / h + 6 V / (L h)). Llama 2 7B at 4K by hand: L h^2 =
// 32 x 4096^2 = 536,870,912; the bracket 12 + 12 + 18 x 11008 / 4096 (48.375) + 12 + 6 x 32000 /
// 131072 (1.4648) = 85.840; 46.085 GFLOP a token, so 768 TFLOP/s is 16,664.9 tokens/s.
TEST(NemoLongSequenceSuite, TokensPerSecondAreThePublishedRateOverNemosFlopsPerToken) {
  const auto all = rows();
  ASSERT_EQ(all.size(), 17u);  // 9 H100 rows, 8 B200 rows
  EXPECT_NEAR(column(all[0], "tps_per_gpu_derived"), 16664.9, 0.05);
  for (const auto& row : all) {
    const bool llama3 = row.columns.at("model") == "LLAMA3-8B";
    const double L = 32, h = 4096, a = 32, g = llama3 ? 8 : 32, f = llama3 ? 14336 : 11008,
                 V = llama3 ? 128256 : 32000, s = column(row, "seq");
    const double per_token =
        L * h * h * (12 + 12 * g / a + 18 * f / h + 12 * s / h + 6 * V / (L * h));
    EXPECT_NEAR(column(row, "tflops_with_cp") * 1e12 / per_token,
                column(row, "tps_per_gpu_derived"), 0.05 + 1e-9)
        << "line " << row.line;
    EXPECT_EQ(column(row, "seq"), column(row, "seq_k") * 1024) << "line " << row.line;
  }
}

// The layout columns multiply to the GPUs a row runs on; the H100 table's own GPU column agrees,
// the B200 table's is four times it in every row (it repeats the sequence column), and each
// data-parallel rank takes whole sequences of the batch.
TEST(NemoLongSequenceSuite, EveryRowRunsOnItsLayoutsGpus) {
  for (const auto& row : rows()) {
    const double gpus =
        column(row, "tp") * column(row, "pp") * column(row, "dp") * column(row, "cp");
    EXPECT_EQ(column(row, "gpus_run"), gpus) << "line " << row.line;
    const double published = column(row, "gpus");
    EXPECT_EQ(published, row.columns.at("system") == "DGX-H100" ? gpus : 4 * gpus)
        << "line " << row.line;
    EXPECT_EQ(std::fmod(column(row, "batch"), column(row, "dp")), 0) << "line " << row.line;
  }
}

}  // namespace
}  // namespace cs
