// Users' nccl-tests logs (validate/nccl_tests_log.h): reading nccl-tests' text output, the error
// per size against a prediction, and the collective line fitted from logs. The logs in
// tests/data/nccl_tests/ are written by hand in nccl-tests' exact layout on one line,
//   time = 20 us + bus bytes / 183.5008 GB/s,
// chosen so that the times are round: an all_reduce over 8 GPUs moves 2 x 7/8 = 1.75 bus bytes per
// buffer byte, and 1.75 x 1 MiB / 183.5008 GB/s = 1,835,008 B / 183,500,800,000 B/s = 10 us; an
// all_gather moves 7/8, 5 us per MiB of buffer.
#include "validate/nccl_tests_log.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "common/error.h"
#include "error_of.h"
#include "scenarios/profile_io.h"
#include "test_paths.h"
#include "topology/cluster_spec.h"

namespace cs {
namespace {

std::string data(const std::string& rel) {
  return cs::test_paths::source_dir() + "/tests/data/nccl_tests/" + rel;
}

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr double kLineBandwidth = 183.5008e9;  // bytes/s

using test::error_of;

validate::NcclTestsLog parse(const std::string& text) {
  std::istringstream in(text);
  return validate::parse_nccl_tests_log(in, "t.log");
}

// A minimal log: the binary, two Rank lines on one host, then `rows`.
std::string log_text(const std::string& rows, const std::string& binary = "all_reduce_perf") {
  return "./build/" + binary +
         " -b 8 -e 16\n"
         "#  Rank  0 Group  0 Pid   100 on host-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
         "#  Rank  1 Group  0 Pid   101 on host-a device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n" +
         rows;
}

TEST(NcclTestsLog, ReadsHeaderRankLinesRowsAndAverage) {
  const auto log = validate::read_nccl_tests_log(data("all_reduce_8xh100_noisy.log"));
  ASSERT_TRUE(log.collective);
  EXPECT_EQ(*log.collective, ir::CollectiveType::all_reduce);
  EXPECT_EQ(log.collective_from,
            "line 1: all_reduce_perf");  // the command line, before the header's own mention
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.nodes(), 1);
  EXPECT_EQ(log.device, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(log.rows.size(), 8u);
  // First row: 65536 B, 16384 floats, out of place 26.10 us, in place 25.00 us: the better
  // is 25.00.
  EXPECT_EQ(log.rows[0].bytes, 65536);
  EXPECT_EQ(log.rows[0].count, 16384);
  EXPECT_EQ(log.rows[0].redop, "sum");
  EXPECT_EQ(log.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place_us, 26.10);
  EXPECT_DOUBLE_EQ(log.rows[0].best_us(), 25.00);
  EXPECT_DOUBLE_EQ(log.rows[0].in_place_busbw, 4.59);
  EXPECT_EQ(log.rows[0].line, 18);
  ASSERT_TRUE(log.avg_bus_bandwidth);
  EXPECT_DOUBLE_EQ(*log.avg_bus_bandwidth, 117.166);
  EXPECT_EQ(validate::cluster_for_device(log.device), "dgx_h100");
}

TEST(NcclTestsLog, ErrorPerSizeAgainstTheProfileLine) {
  auto log = validate::read_nccl_tests_log(data("all_reduce_8xh100_noisy.log"));
  validate::settle_collective(log, std::nullopt);
  // The shipped H100 profile with the measured line 20 us + bus bytes / 183.5008 GB/s: predicted
  // = 20 + 10 us per MiB of buffer, through the simulator (one all_reduce over ranks 0-7).
  cost::Profile p =
      scenario::load_profile(cs::test_paths::source_dir() + "/profiles/h100_sxm.yaml");
  p.collectives = cost::MeasuredCollectives{SimTime::from_us(20), {kLineBandwidth}};
  const auto group = validate::group_of(log, topo::find_cluster_preset("dgx_h100"));
  ASSERT_EQ(group.ranks.size(), 8u);
  EXPECT_EQ(group.ranks.back(), 7u);
  const auto predicted =
      validate::predict_nccl_tests(log, group, &p, cost::NetworkFidelity::analytic);
  ASSERT_EQ(predicted.size(), log.rows.size());
  for (size_t i = 0; i < predicted.size(); ++i) {
    EXPECT_NEAR(predicted[i], 20 + 10 * static_cast<double>(log.rows[i].bytes) / kMiB, 1e-5)
        << log.rows[i].bytes;
  }
  size_t k = 0;
  const auto c = validate::compare_nccl_tests(log, [&](int64_t) { return predicted[k++]; });
  // Measured (better of the two) vs predicted, error = predicted / measured - 1:
  //   64 KiB  25.00 vs 20.625  -17.5%      16 MiB  200.0 vs 180   -10%
  //  256 KiB  25.00 vs 22.5    -10%        64 MiB  600.0 vs 660   +10%
  //    1 MiB  30.00 vs 30        0%       256 MiB 2580.0 vs 2580    0%
  //    4 MiB  50.00 vs 60      +20%         1 GiB  10260 vs 10260   0%
  const double expected[] = {-17.5, -10, 0, 20, -10, 10, 0, 0};
  ASSERT_EQ(c.rows.size(), 8u);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(c.rows[i].error_percent, expected[i], 1e-4) << c.rows[i].bytes;
  EXPECT_NEAR(c.mape_percent, 67.5 / 8, 1e-4);  // (17.5 + 10 + 20 + 10 + 10) / 8 = 8.4375
  EXPECT_NEAR(c.worst_percent, 20, 1e-4);
  EXPECT_EQ(c.worst_bytes, 4 * kMiB);
  // busbw of the 4 MiB row: 4 MiB / 50 us x 1.75 = 146.80 GB/s (the log prints 146.80).
  EXPECT_NEAR(c.rows[3].measured_busbw, 4194304.0 / 50 * 1e-3 * 1.75, 1e-9);
}

TEST(NcclTestsLog, FitRecoversTheLineFromTwoCollectives) {
  // An all_reduce and an all_gather log, both exactly on 20 us + bus bytes / 183.5008 GB/s: pooled
  // on bus bytes (1.75 and 0.875 per buffer byte) they lie on one line, which the fit returns.
  std::vector<validate::NcclTestsLog> logs{
      validate::read_nccl_tests_log(data("all_reduce_8xh100_line.log")),
      validate::read_nccl_tests_log(data("all_gather_8xh100_line.log"))};
  for (auto& l : logs) validate::settle_collective(l, std::nullopt);
  EXPECT_EQ(*logs[1].collective, ir::CollectiveType::all_gather);
  const auto fit = validate::fit_collective_line(logs);
  EXPECT_EQ(fit.rows, 12u);
  EXPECT_NEAR(fit.line.latency.us(), 20, 1e-6);
  EXPECT_NEAR(fit.line.bus_bandwidth.value, kLineBandwidth, kLineBandwidth * 1e-9);
  EXPECT_LT(fit.mape_percent, 1e-6);
}

TEST(NcclTestsLog, FitWeighsRelativeErrorAndClampsANegativeLatency) {
  // all_reduce on 2 GPUs would be a bus factor of 1; here 8 ranks (1.75): 1 MiB in 10 us, 2 MiB in
  // 30 us. The line through both has latency -10 us, so the fit goes through the origin,
  // minimising sum ((beta x - y) / y)^2: beta = sum(x/y) / sum((x/y)^2) with x/y = 1.75/10 = 7/40
  // and 3.5/30 = 7/60 MiB/us: beta = (7/24) / (637/14400) = 600/91 us per MiB of bus bytes, i.e.
  // 91/600 MiB/us = 1,048,576 x 91 / 600 = 159,034.03 B/us. (Plain least squares would give
  // 122.5/15.3125 = 8 us per MiB.)
  std::string rows =
      "     1048576        262144     float     sum      -1    10.00  104.86  183.50      0    "
      "10.00  104.86  183.50      0\n"
      "     2097152        524288     float     sum      -1    30.00   69.91  122.34      0    "
      "30.00   69.91  122.34      0\n";
  std::string ranks;
  for (int r = 2; r < 8; ++r)
    ranks += "#  Rank  " + std::to_string(r) + " Group  0 Pid   10" + std::to_string(r) +
             " on host-a device  " + std::to_string(r) + " [0] GPU\n";
  auto log = parse(log_text(ranks + rows));
  validate::settle_collective(log, std::nullopt);
  EXPECT_EQ(log.ranks, 8);
  const auto fit = validate::fit_collective_line({log});
  EXPECT_EQ(fit.line.latency.ps, 0);
  EXPECT_NEAR(fit.line.bus_bandwidth.value, 1048576.0 * 91 / 600 * 1e6, 1);
  // Fitted times 1.75 x 600/91 = 11.54 us (+15.4%) and 23.08 us (-23.1%).
  EXPECT_NEAR(fit.worst_percent, 100 * (3.5 * 600 / 91 / 30 - 1), 1e-6);
}

TEST(NcclTestsLog, GroupTakesEachHostsFirstGpus) {
  // Two hosts with 4 GPUs each on DGX H100 (8 GPUs a node): ranks 0-3 and 8-11 of a 2-node cluster.
  std::string text = "all_gather_perf -b 8\n";
  for (int r = 0; r < 8; ++r) {
    text += "#  Rank " + std::to_string(r) + " Group 0 Pid 1 on " + (r < 4 ? "a" : "b") +
            " device " + std::to_string(r % 4) + " [0x1] NVIDIA H100\n";
  }
  text += "1024 32 float none -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n";  // 32 floats per rank x 8 ranks
                                                                    // = 1024 B
  auto log = parse(text);
  validate::settle_collective(log, std::nullopt);
  const auto g = validate::group_of(log, topo::find_cluster_preset("dgx_h100"));
  EXPECT_EQ(g.cluster.nodes, 2);
  EXPECT_EQ(g.ranks, (std::vector<ir::RankId>{0, 1, 2, 3, 8, 9, 10, 11}));
  // A host with more GPUs than a node has (a DGX H100 cut to 2 GPUs a node).
  topo::ClusterSpec small = topo::find_cluster_preset("dgx_h100");
  small.node.gpus = 2;
  EXPECT_NE(error_of([&] {
              validate::group_of(log, small);
            }).find("host a has 4 GPUs in the log, a node of dgx_h100 has 2"),
            std::string::npos);
  // Two hosts on a preset without a network: refused before any host is looked at.
  EXPECT_NE(error_of([&] {
              validate::group_of(log, topo::find_cluster_preset("hgx_h100_2gpu"));
            }).find("the log spans 2 hosts but cluster 'hgx_h100_2gpu' is a single machine"),
            std::string::npos);
}

TEST(NcclTestsLog, OlderRankLinesAndMpirunTags) {
  // nccl-tests before 2.10 printed no Group; mpirun --tag-output prefixes every line.
  auto log = parse(
      "[1,0]<stdout>:# Collective test starting: broadcast_perf\n"
      "[1,0]<stdout>:#   Rank  0 Pid  1234 on   v100-box device  0 [0x1b] Tesla V100-SXM2-16GB\n"
      "[1,0]<stdout>:#   Rank  1 Pid  1235 on   v100-box device  1 [0x1c] Tesla V100-SXM2-16GB\n"
      "[1,0]<stdout>:          64            16     float    none       0    11.50    0.01    0.01 "
      "   N/A    11.20    0.01    0.01    N/A\n");
  validate::settle_collective(log, std::nullopt);
  EXPECT_EQ(*log.collective, ir::CollectiveType::broadcast);
  EXPECT_EQ(log.ranks, 2);
  EXPECT_EQ(log.device, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(log.rows[0].root, 0);
  EXPECT_EQ(log.rows[0].wrong, 0);                          // N/A: not checked
  EXPECT_EQ(validate::cluster_for_device(log.device), "");  // no preset: the CLI asks for --cluster
}

TEST(NcclTestsLog, BadInputNamesFileLineAndWhatIsValid) {
  const std::string row = "   8   2  float  sum  -1  ";
  EXPECT_EQ(error_of([&] { parse(log_text(row + "abc 0.00 0.00 0 12.0 0.00 0.00 0\n")); }),
            "t.log:4: out-of-place time 'abc': expected a number above 0 up to 1e+12");
  EXPECT_EQ(error_of([&] { parse(log_text(row + "-3 0.00 0.00 0 12.0 0.00 0.00 0\n")); }),
            "t.log:4: out-of-place time '-3': expected a number above 0 up to 1e+12");
  EXPECT_NE(error_of([&] {
              parse(log_text(row + "12.0 0.00 0.00 0 12.0 0.00 0.00\n"));
            }).find("t.log:4: expected nccl-tests' 13 columns"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse(log_text("   8   2  float32  sum  -1  12.0 0.00 0.00 0 12.0 0.00 0.00 0\n"));
            }).find("t.log:4: type 'float32': valid types are int8, uint8"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { parse(log_text(row + "12.0 0.00 0.00 -1 12.0 0.00 0.00 0\n")); }),
            "t.log:4: #wrong '-1': expected a whole number from 0 to 1125899906842624");
  EXPECT_EQ(error_of([&] { parse(log_text("")); }),
            "t.log: no nccl-tests data rows (each starts with the size in bytes and the count, "
            "e.g. '8  2  float  sum  -1  12.90 ...')");
  EXPECT_EQ(error_of([&] {
              parse(log_text("./build/all_gather_perf -b 8\n" + row +
                             "12.0 0.00 0.00 0 12.0 0.00 0.00 0\n"));
            }),
            "t.log:4: names all_gather_perf after line 1: all_reduce_perf; one collective per log "
            "(split the file)");
  // No binary named: --collective is needed.
  auto bare = parse("  8  2  float  sum  -1  12.0 0.00 0.00 0 12.0 0.00 0.00 0\n");
  EXPECT_NE(error_of([&] {
              validate::settle_collective(bare, std::nullopt);
            }).find("the log names no nccl-tests binary"),
            std::string::npos);
  // A binary clustersim does not model.
  auto sendrecv = parse(log_text(row + "12.0 0.00 0.00 0 12.0 0.00 0.00 0\n", "sendrecv_perf"));
  EXPECT_NE(error_of([&] {
              validate::settle_collective(sendrecv, std::nullopt);
            }).find("line 1: sendrecv_perf is not a collective clustersim models"),
            std::string::npos);
  // An all_gather row whose count is the total (clustersim's old bench-collective did that):
  // 8 B over 2 ranks is 1 float per rank, not 2.
  auto gather = parse(log_text("   8   2  float  none  -1  12.0 0.00 0.00 0 12.0 0.00 0.00 0\n",
                               "all_gather_perf"));
  EXPECT_EQ(error_of([&] { validate::settle_collective(gather, std::nullopt); }),
            "t.log:4: size 8 is not count 2 x 4 B (float) x 2 ranks, as nccl-tests prints "
            "all_gather (count per rank); is this log of another "
            "collective? (--collective)");
  // Two sizes needed for a line.
  auto one = parse(log_text(row + "12.0 0.00 0.00 0 12.0 0.00 0.00 0\n"));
  validate::settle_collective(one, std::nullopt);
  EXPECT_EQ(error_of([&] { validate::fit_collective_line({one}); }),
            "t.log: fitting a latency and a bandwidth needs rows of at least two sizes");
}

}  // namespace
}  // namespace cs
