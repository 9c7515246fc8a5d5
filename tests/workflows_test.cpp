// The pieces workflows/ and the executors share, tested without running a command: the memory
// ledger of both executor backends, the nccl-tests log writer read back by its reader, the
// calibration CSV, and the plan objective's name table.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "executor/memory_ledger.h"
#include "validate/calibration.h"
#include "validate/kineto_report.h"
#include "validate/nccl_tests_log.h"
#include "workflows/bench_collective.h"
#include "workflows/planning.h"

namespace cs {
namespace {

struct Block {
  int64_t bytes;
  int id;
};

TEST(MemoryLedger, FreesTheLatestBlockOfTheSizeElseTheLatestOnesUntilCovered) {
  exec::MemoryLedger<Block> ledger;
  const auto act = ir::MemoryCategory::activations;
  ledger.add(act, {100, 1});
  ledger.add(act, {200, 2});
  ledger.add(act, {100, 3});
  std::vector<int> released;
  auto release = [&](Block& b) { released.push_back(b.id); };
  ledger.free(act, 100, release);  // the latest 100-byte block: 3
  ledger.free(act, 250, release);  // no block of 250: the latest ones, 2 then 1 (300 >= 250)
  EXPECT_EQ(released, (std::vector<int>{3, 2, 1}));
  EXPECT_TRUE(ledger.live(act).empty());
  // Counted: 100 + 200 + 100 - 100 - 250 = 50 (the ledger counts what the task says).
  EXPECT_EQ(ledger.current(), 50);
  EXPECT_EQ(ledger.peak(), 400);  // 100 + 200 + 100 before any free
}

TEST(MemoryLedger, ALaterStepTakesBackWhatIsStillAliveWithoutCountingItTwice) {
  exec::MemoryLedger<Block> ledger;
  const auto params = ir::MemoryCategory::parameters;
  EXPECT_FALSE(ledger.take_back(params, 64));  // nothing kept yet
  EXPECT_TRUE(ledger.add(params, {64, 1}));    // a new peak: 64
  ledger.add(ir::MemoryCategory::activations, {32, 2});
  ledger.free(ir::MemoryCategory::activations, 32, [](Block&) {});
  ledger.end_step();
  EXPECT_TRUE(ledger.live(params).empty());
  EXPECT_FALSE(ledger.take_back(params, 65));  // another size is a new block
  EXPECT_TRUE(ledger.take_back(params, 64));   // step 2's allocation of the same parameters
  ASSERT_EQ(ledger.live(params).size(), 1u);
  EXPECT_EQ(ledger.live(params)[0].id, 1);
  EXPECT_EQ(ledger.current(), 64);  // not 128: the block never left
  EXPECT_EQ(ledger.peak(), 96);     // 64 + 32 in step 1
  EXPECT_EQ(ledger.at_peak()[static_cast<size_t>(ir::MemoryCategory::activations)], 32);
}

TEST(MemoryLedger, SaysWhatIsAliveAndJudgesALimit) {
  exec::MemoryLedger<Block> ledger;
  auto kib = [](int64_t b) { return std::to_string(b / 1024) + " KiB"; };
  EXPECT_EQ(ledger.alive_text(kib), "nothing");
  ledger.add(ir::MemoryCategory::gradients, {2048, 1});
  ledger.add(ir::MemoryCategory::parameters, {1024, 2});
  // Categories in their enum order (parameters before gradients), with bytes alive only.
  EXPECT_EQ(ledger.alive_text(kib), "parameters 1 KiB, gradients 2 KiB");
  EXPECT_FALSE(ledger.beyond(0, 1 << 30));  // 0: no limit
  EXPECT_FALSE(ledger.beyond(4096, 1024));  // 3072 + 1024 = 4096, at the limit
  EXPECT_TRUE(ledger.beyond(4096, 1025));
}

TEST(NcclTestsLogWriter, WhatItWritesItsReaderReadsBack) {
  // An all-reduce over 8 ranks of 2 nodes of 4, 1 MiB to 4 MiB by 2, at 100 us + 10 us per MiB.
  validate::NcclTestsSweep sweep;
  sweep.min = Bytes{1 << 20};
  sweep.max = Bytes{4 << 20};
  sweep.cluster = "dgx_h100";
  sweep.device = "H100";
  sweep.gpus_per_node = 4;
  const std::vector<ir::RankId> ranks{0, 1, 2, 3, 4, 5, 6, 7};
  std::ostringstream text;
  validate::write_nccl_tests_log(text, sweep, ranks, [](Bytes b) {
    return 100.0 + 10.0 * static_cast<double>(b.count) / (1 << 20);
  });
  std::istringstream in(text.str());
  validate::NcclTestsLog log = validate::parse_nccl_tests_log(in, "written");
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.nodes(), 1);  // every Rank line names the cluster as its host
  ASSERT_EQ(log.rows.size(), 3u);
  EXPECT_EQ(log.rows[0].bytes, 1 << 20);
  EXPECT_EQ(log.rows[0].count, (1 << 20) / 4);  // floats
  EXPECT_DOUBLE_EQ(log.rows[0].best_us(), 110.0);
  EXPECT_DOUBLE_EQ(log.rows[2].best_us(), 140.0);
  // algbw of 1 MiB in 110 us: 1048576 B / 110e-6 s = 9.53 GB/s; busbw x 2 (8 - 1) / 8 = 16.68.
  EXPECT_NEAR(log.rows[0].out_of_place_algbw, 9.53, 0.005);
  EXPECT_NEAR(log.rows[0].out_of_place_busbw, 16.68, 0.005);
  validate::settle_collective(log, ir::CollectiveType::all_reduce);
  EXPECT_EQ(log.collective, ir::CollectiveType::all_reduce);
}

TEST(BenchCollectiveWorkflow, ItsNcclTestsOutputReadsBackAsTheModelledRingBandwidth) {
  // 1 GiB ring/Simple all-reduce over the 8 H100 of one DGX H100: ~347 GB/s busbw, the derivation
  // in network_test.cpp (NcclFigures.DgxH100RingAndNvlsBusBandwidthAt1GiB), printed in nccl-tests'
  // layout and read back by validate's nccl-tests reader.
  workflows::BenchCollectiveRequest o;
  o.gpus = 8;
  o.max_cluster_gpus = 131072;
  o.min = o.max = Bytes{int64_t{1} << 30};
  o.collectives.algorithm = cost::Algorithm::ring;
  o.collectives.protocol = cost::Protocol::simple;
  o.nccl_tests_format = true;
  o.flow = false;
  std::ostringstream out;
  ASSERT_EQ(workflows::bench_collective(o, out), 0);
  std::istringstream in(out.str());
  const validate::NcclTestsLog log = validate::parse_nccl_tests_log(in, "bench");
  EXPECT_EQ(log.ranks, 8);
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_NEAR(log.rows[0].out_of_place_busbw, 346.9, 1.0);
  ASSERT_TRUE(log.avg_bus_bandwidth);
  EXPECT_NEAR(*log.avg_bus_bandwidth, 346.9, 1.0);
}

TEST(CalibrationCsv, OneRowPerTaskOtherThanMemoryInTheSuitesOrder) {
  const ir::TaskGraph g = validate::calibration_graph("compute", 1);
  validate::TaskDurations d;
  d.graph = &g;
  size_t timed = 0;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    d.start.push_back(t);
    d.end.push_back(t + 0.5);
    timed += g.task(t).kind == ir::TaskKind::memory ? 0 : 1;
  }
  std::ostringstream out;
  validate::write_measurements_csv(out, {{"compute", &d}, {"again", &d}});
  std::istringstream lines(out.str());
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "suite,benchmark,rank,start_s,end_s");
  size_t rows = 0, again = 0;
  while (std::getline(lines, line)) {
    ++rows;
    again += line.rfind("again,", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(rows, 2 * timed);
  EXPECT_EQ(again, timed);
  EXPECT_GT(timed, 0u);
}

TEST(KinetoReport, ErrorIsPredictedOverMeasuredLessOne) {
  EXPECT_NEAR(validate::error_percent(11.0, 10.0), 10.0, 1e-12);
  EXPECT_DOUBLE_EQ(validate::error_percent(5.0, 10.0), -50.0);
  EXPECT_DOUBLE_EQ(validate::error_percent(5.0, 0.0), 0.0);  // nothing measured: no error
}

TEST(PlanObjective, NamesRoundTrip) {
  for (const auto& [name, value] : workflows::objective_names())
    EXPECT_EQ(workflows::to_string(value), name);
  EXPECT_EQ(workflows::to_string(planner::Objective::memory), "memory");
  EXPECT_EQ(workflows::objective_names().size(), 2u);
}

}  // namespace
}  // namespace cs
