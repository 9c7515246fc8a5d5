// validate --table's held-out error by parallelism (validate::errors_by_parallelism), on rows whose
// predictions are set by hand: the default factors predict the sum of the parts, here the GEMM
// part.
#include <gtest/gtest.h>

#include "validate/table_validation.h"

namespace cs::validate {
namespace {

TEST(ErrorsByParallelism, EachTypeSummarisesItsOwnRowsInUse) {
  // (tp, dp, pp), measured s, predicted s, |error|:
  //   0: (1, 1, 1) 1.0  1.1  10%   single GPU
  //   1: (2, 1, 1) 2.0  1.8  10%   tensor
  //   2: (2, 1, 1) 1.0  1.3  30%   tensor
  //   3: (1, 4, 1) 4.0  5.0  25%   data: not in use
  //   4: (2, 1, 2) 1.0  0.5  50%   tensor+pipeline
  // tensor: MAPE (10 + 30) / 2 = 20%, median the upper of two sorted (30%), worst 30%.
  struct R {
    int tp, dp, pp;
    double measured, predicted;
  };
  const R given[] = {{1, 1, 1, 1.0, 1.1},
                     {2, 1, 1, 2.0, 1.8},
                     {2, 1, 1, 1.0, 1.3},
                     {1, 4, 1, 4.0, 5.0},
                     {2, 1, 2, 1.0, 0.5}};
  std::vector<TableRow> rows;
  std::vector<RowParts> parts;
  for (const R& g : given) {
    TableRow r;
    r.tp = g.tp, r.dp = g.dp, r.pp = g.pp, r.measured_s = g.measured;
    rows.push_back(r);
    RowParts p;
    p.gemm = g.predicted;
    parts.push_back(p);
  }
  const auto by = errors_by_parallelism(rows, parts, Factors{}, {0, 1, 2, 4});
  ASSERT_EQ(by.size(), 3u);
  EXPECT_EQ(by.count("data"), 0u);
  EXPECT_EQ(by.at("single GPU").rows, 1u);
  EXPECT_NEAR(by.at("single GPU").mape, 10, 1e-9);
  EXPECT_EQ(by.at("tensor").rows, 2u);
  EXPECT_NEAR(by.at("tensor").mape, 20, 1e-9);
  EXPECT_NEAR(by.at("tensor").median, 30, 1e-9);
  EXPECT_NEAR(by.at("tensor").worst, 30, 1e-9);
  EXPECT_NEAR(by.at("tensor+pipeline").mape, 50, 1e-9);
}

}  // namespace
}  // namespace cs::validate
