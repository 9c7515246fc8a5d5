// The bottleneck in words (reports/bottleneck.h): hand-built figures give the sentences below, and
// the figures of a small hand-built run are derived by hand.
#include "reports/bottleneck.h"

#include <gtest/gtest.h>

#include "fixed_cost_model.h"
#include "sim/engine.h"
#include "small_trace_run.h"

namespace cs {
namespace {

using sim::PathClass;

SimTime ms(double v) { return SimTime::from_seconds(v * 1e-3); }

reports::BottleneckFigures figures(double gemm, double attention, double memory_bound, double comm,
                                   double idle) {
  reports::BottleneckFigures f;
  f.step_time = ms(gemm + attention + memory_bound + comm + idle);
  f.critical_path[static_cast<size_t>(PathClass::gemm)] = ms(gemm);
  f.critical_path[static_cast<size_t>(PathClass::attention)] = ms(attention);
  f.critical_path[static_cast<size_t>(PathClass::memory_bound)] = ms(memory_bound);
  f.critical_path[static_cast<size_t>(PathClass::communication)] = ms(comm);
  f.critical_path[static_cast<size_t>(PathClass::idle)] = ms(idle);
  return f;
}

TEST(Bottleneck, ComputeBoundWithIdleInfiniBandSaysMoreBandwidthWillNotHelp) {
  // 100 ms path: GEMMs 60, attention 10, memory-bound 10 (compute 80%), communication 15 (over the
  // 10% worth naming), idle 5. Tensor-parallel all-reduce on NVLink exposed 12 ms per rank = 12%;
  // data-parallel reduce-scatter over InfiniBand 0.5 ms = 0.5% (< 5%), busiest IB link 6% (< 50%).
  auto f = figures(60, 10, 10, 15, 5);
  f.communication = {{"tensor-parallel", "all_reduce", "nvlink", ms(12)},
                     {"data-parallel", "reduce_scatter", "infiniband", ms(0.5)}};
  f.link_kinds["infiniband"] = {16, 1e9, 0.04, 0.06};
  f.link_kinds["nvlink"] = {128, 1e12, 0.30, 0.45};
  const auto lines = reports::explain_bottleneck(f);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "step bound by compute: 80% of the critical path (GEMMs 60%, attention 10%, "
            "memory-bound kernels 10%)");
  EXPECT_EQ(lines[1],
            "communication is 15% of the critical path; most exposed: tensor-parallel all_reduce "
            "on NVLink, 12.000 ms per rank (12% of the step)");
  EXPECT_EQ(lines[2],
            "InfiniBand links at 4.0% (busiest 6.0%), and communication limited by them is exposed "
            "for 0.5% of the step: "
            "more InfiniBand bandwidth will not help");
}

TEST(Bottleneck, CommunicationBoundOverBusyInfiniBandSaysBandwidthWouldHelp) {
  // Path: compute 40 (GEMMs), communication 50, idle 10 of 100 ms. Data-parallel all-reduce over
  // InfiniBand exposed 30 ms per rank = 30% of the step; busiest IB link 80%.
  auto f = figures(40, 0, 0, 50, 10);
  f.communication = {{"data-parallel", "all_reduce", "infiniband", ms(30)}};
  f.link_kinds["infiniband"] = {16, 1e9, 0.70, 0.80};
  const auto lines = reports::explain_bottleneck(f);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "step bound by communication: 50% of the critical path; most exposed: data-parallel "
            "all_reduce over InfiniBand, "
            "30.000 ms per rank with no compute under it (30% of the step)");
  EXPECT_EQ(lines[1],
            "InfiniBand links at 70% (busiest 80%); communication limited by them is exposed for "
            "30% of the step (30.000 ms): "
            "more InfiniBand bandwidth would shorten the step by up to that");
}

TEST(Bottleneck, IdleBoundAndSingleNodeHasNoNetworkLine) {
  // Path: compute 30, communication 10, idle 60 of 100 ms: idle is the largest share. NVLink only:
  // no network line, and communication (10%) is not named when the bound is waiting.
  auto f = figures(30, 0, 0, 10, 60);
  f.link_kinds["nvlink"] = {8, 1e9, 0.05, 0.06};
  const auto lines = reports::explain_bottleneck(f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "step bound by waiting: 60% of the critical path is idle (pipeline bubble, or ranks "
            "waiting for peers); "
            "more micro-batches or fewer stages shorten it");
}

TEST(Bottleneck, FiguresOfASmallRun) {
  // Rank r computes 10 us, then a "100 us" all-reduce on the compute stream (tensor-parallel)
  // while rank 0 sends "30 us" to rank 1 on pp.send. Times: compute [0, 10], all-reduce [10, 110],
  // transfer [10, 40]. Exposed (no compute under it): the all-reduce 100 us on each rank -> mean
  // 100 us; the transfer 30 us on each end -> (30 + 30) / 2 ranks = 30 us.
  ir::TaskGraph g(2);
  const auto compute = g.add_stream("compute");
  const auto send = g.add_stream("pp.send");
  const auto recv = g.add_stream("pp.recv");
  const auto call = g.new_collective(ir::CollectiveType::all_reduce, Bytes{100}, g.group({0, 1}));
  const auto x = g.new_transfer(0, 1, Bytes{30});
  for (ir::RankId r = 0; r < 2; ++r) {
    ir::ComputeOp op = test::op_us(10);
    op.op = ir::OpClass::gemm;
    const auto c = g.add_compute(r, compute, op, g.label("gemm", ir::Phase::forward));
    g.add_collective(r, compute, call, g.label("tp.ar", ir::Phase::forward));
    if (r == 0)
      g.add_dependency(c, g.add_send(0, send, x, g.label("send", ir::Phase::forward)));
    else
      g.add_recv(1, recv, x, g.label("recv", ir::Phase::forward));
  }
  g.finalize();
  // Two links: 0 NVLink, 1 InfiniBand, both 1 MB/s; collectives load link 0, transfers link 1.
  test::TwoLinkCostModel costs{1e6, 1e6};
  const auto tl = sim::Engine(g, costs).run();
  const std::vector<sim::LinkInfo> links{{"nvlink"}, {"infiniband"}};
  const auto report = sim::make_report(g, tl, {.links = &links});
  const auto f = reports::bottleneck_figures(g, tl, report, &costs, &links);
  EXPECT_EQ(f.step_time, SimTime::from_us(110));
  // Critical path: the all-reduce (100 us) after the GEMM (10 us).
  EXPECT_EQ(f.critical_path[static_cast<size_t>(PathClass::gemm)], SimTime::from_us(10));
  EXPECT_EQ(f.critical_path[static_cast<size_t>(PathClass::communication)], SimTime::from_us(100));
  ASSERT_EQ(f.communication.size(), 2u);
  EXPECT_EQ(f.communication[0].parallelism, "tensor-parallel");
  EXPECT_EQ(f.communication[0].operation, "all_reduce");
  EXPECT_EQ(f.communication[0].link_kind, "nvlink");
  EXPECT_EQ(f.communication[0].exposed, SimTime::from_us(100));
  EXPECT_EQ(f.communication[1].parallelism, "pipeline");
  EXPECT_EQ(f.communication[1].operation, "send/recv");
  EXPECT_EQ(f.communication[1].link_kind, "infiniband");
  EXPECT_EQ(f.communication[1].exposed, SimTime::from_us(30));
  // InfiniBand: 30 B at 1 MB/s = 30 us busy of 110 us = 27% (< 50%), but the transfer it limits is
  // exposed for 30 / 110 = 27% of the step (>= 5%): bandwidth would help.
  const auto lines = reports::explain_bottleneck(f);
  // Communication is 100 of the 110 us path: 91%, the bound (so no second "communication is" line).
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("step bound by communication: 91% of the critical path", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1],
            "InfiniBand links at 27% (busiest 27%); communication limited by them is exposed for "
            "27% of the step (30.000 us): "
            "more InfiniBand bandwidth would shorten the step by up to that");
}

}  // namespace
}  // namespace cs
