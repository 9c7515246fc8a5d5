// The transcriptions behind Megatron-LM's two A100 sources (validate/suites/
// narayanan_2021_megatron_a100.yaml, korthikanti_2022_megatron_a100.yaml): the SC21 table's
// iteration time is derived from its published TFLOP/s with the paper's own FLOP count, and each
// row's layout must be one the launch script could run.
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

const std::vector<std::string> kSc21Columns = {
    "billions",       "heads",         "hidden", "layers",       "tp",          "pp",
    "chunks",         "gpus",          "dp",     "global_batch", "micro_batch", "ddp",
    "tflops_per_gpu", "step_s_derived"};

// Narayanan et al. 2021, Eq. 3: an iteration of batch B, sequence s, l layers of hidden h and a
// vocabulary V takes F = 96 B s l h^2 (1 + s / 6h + V / 16 l h) FLOPs (activation recomputation
// counted), so its time is F / (TFLOP/s per GPU x GPUs). The 1T row by hand: 96 x 3072 x 2048 x 128
// x 25600^2 = 5.0665e19; the bracket 1 + 2048 / 153600 + 51200 / 52428800 = 1.01431; F = 5.1390e19;
// over 163e12 x 3072 = 5.00736e17 FLOP/s: 102.63 s.
TEST(MegatronLmA100Suites, Sc21IterationTimeIsThePapersFlopCountOverItsRate) {
  const auto rows = validate::read_csv_rows(
      kSource + "/validate/data/narayanan_2021_megatron_a100.csv", kSc21Columns);
  ASSERT_EQ(rows.size(), 10u);  // Table 1: 1.7B to 1T
  EXPECT_NEAR(column(rows.back(), "step_s_derived"), 102.6, 0.05);
  constexpr double s = 2048, V = 51200;
  for (const auto& row : rows) {
    const double B = column(row, "global_batch"), l = column(row, "layers"),
                 h = column(row, "hidden");
    const double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    const double step = flops / (column(row, "tflops_per_gpu") * 1e12 * column(row, "gpus"));
    EXPECT_NEAR(step, column(row, "step_s_derived"), 0.0005 + 1e-9) << "line " << row.line;
  }
}

// Each row's layout is one Megatron-LM runs: dp = GPUs / (TP x PP), whole micro-batches per
// data-parallel rank, and the interleaved chunks split a stage's layers evenly (run_table_1.sh's
// --num-layers-per-virtual-pipeline-stage: 76.1B has 60 / 4 = 15 layers a stage in chunks of 5, 3
// chunks).
TEST(MegatronLmA100Suites, EveryRowsLayoutDivides) {
  const auto sc21 = validate::read_csv_rows(
      kSource + "/validate/data/narayanan_2021_megatron_a100.csv", kSc21Columns);
  const auto paper =
      validate::read_csv_rows(kSource + "/validate/data/korthikanti_2022_megatron_a100.csv",
                              {"model", "heads", "hidden", "layers", "tp", "pp", "chunks", "gpus",
                               "global_batch", "micro_batch", "mode", "iteration_s"});
  ASSERT_EQ(paper.size(), 8u);  // Table 5: 4 models x (full, selective with sequence parallelism)
  EXPECT_EQ(column(sc21[5], "chunks"), 3);
  for (const auto* table : {&sc21, &paper}) {
    for (const auto& row : *table) {
      const int64_t tp = std::llround(column(row, "tp")), pp = std::llround(column(row, "pp"));
      const int64_t gpus = std::llround(column(row, "gpus"));
      const int64_t dp = row.columns.count("dp") ? std::llround(column(row, "dp")) : 1;
      EXPECT_EQ(tp * pp * dp, gpus) << "line " << row.line;
      const int64_t per_rank = std::llround(column(row, "global_batch")) / dp;
      EXPECT_EQ(per_rank % std::llround(column(row, "micro_batch")), 0) << "line " << row.line;
      const int64_t per_stage = std::llround(column(row, "layers")) / pp;
      EXPECT_EQ(per_stage % std::llround(column(row, "chunks")), 0) << "line " << row.line;
    }
  }
}

}  // namespace
}  // namespace cs
