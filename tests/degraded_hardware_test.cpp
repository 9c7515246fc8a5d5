// Stragglers and degraded hardware (scenario `degraded:`, simulate --stragglers): a slow GPU's
// compute stretched by 1 / factor while every collective waits for it, a degraded NIC's links at
// a fraction of their bandwidth, the block's errors, and the analysis that ranks layouts.
#include <gtest/gtest.h>

#include <string>

#include "driver/simulation.h"
#include "fixed_cost_model.h"
#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "strategies/layout.h"
#include "workflows/stragglers.h"

namespace cs {
namespace {

using test::op_us;

// GPT-2 Large, data-parallel over two DGX H100 (16 GPUs, one sequence each).
const std::string kTwoNodes = R"(name: two-nodes
model:
  preset: gpt2-large
cluster:
  preset: dgx_h100
  nodes: 2
layout:
  dp: 16
training:
  global_batch: 16
  micro_batch: 1
  seq_len: 1024
  precision: amp_bf16
)";

scenario::Scenario two_nodes(const std::vector<scenario::KeyOverride>& set = {}) {
  return scenario::parse_scenario(kTwoNodes, "two-nodes.yaml", set);
}

std::string error_of(const std::string& degraded) {
  try {
    two_nodes({{"degraded", degraded}});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// One DP-only step by hand, four ranks: forward F = 100 us, backward in two halves of 50 us, each
// half's gradient bucket all-reduced (30 us) on the communication stream as soon as it is ready,
// the optimizer (20 us) after both reductions.
//   healthy: backward half 1 ends at 150; bucket 1 reduces [150, 180] under backward half 2
//   [150, 200]; bucket 2 [200, 230]; optimizer [230, 250]: step 250 us.
//   rank 2 at 0.8x: its kernels take 1.25x: F 125, halves 62.5, optimizer 25. Its half 1 ends at
//   187.5, and every rank's bucket 1 waits for it: [187.5, 217.5]; its half 2 ends at 250, bucket
//   2 [250, 280]; the optimizer ends at 300 on healthy ranks, 305 on rank 2: step 305 us, +22%,
//   not the +25% of stretching the whole step: the all-reduces run at the network's pace.
TEST(Stragglers, OneSlowGpuStretchesItsComputeAndEveryAllReduceWaitsForIt) {
  constexpr int kRanks = 4;
  ir::TaskGraph g(kRanks);
  const auto compute = g.add_stream("compute");
  const auto comm = g.add_stream("dp.comm");
  std::vector<uint32_t> all{0, 1, 2, 3};
  const auto group = g.group(all);
  const auto bucket1 = g.new_collective(ir::CollectiveType::all_reduce, Bytes{30}, group);
  const auto bucket2 = g.new_collective(ir::CollectiveType::all_reduce, Bytes{30}, group);
  for (ir::RankId r = 0; r < kRanks; ++r) {
    g.add_compute(r, compute, op_us(100), g.label("forward", ir::Phase::forward));
    const auto b1 =
        g.add_compute(r, compute, op_us(50), g.label("backward 1", ir::Phase::backward));
    const auto b2 =
        g.add_compute(r, compute, op_us(50), g.label("backward 2", ir::Phase::backward));
    const auto r1 = g.add_collective(r, comm, bucket1, g.label("bucket 1", ir::Phase::backward));
    const auto r2 = g.add_collective(r, comm, bucket2, g.label("bucket 2", ir::Phase::backward));
    const auto opt =
        g.add_compute(r, compute, op_us(20), g.label("optimizer", ir::Phase::optimizer));
    g.add_dependency(b1, r1);
    g.add_dependency(b2, r2);
    g.add_dependency(r1, opt);
    g.add_dependency(r2, opt);
  }
  g.finalize();
  test::FixedCostModel costs;
  const auto healthy = sim::Engine(g, costs).run();
  EXPECT_EQ(healthy.makespan, 250_us);
  const auto slow = sim::Engine(g, costs).with_compute_rates({1.0, 1.0, 0.8, 1.0}).run();
  EXPECT_NEAR(slow.makespan.us(), 305.0, 1e-5);
  const auto rep = sim::make_report(g, slow, {});
  // Rank 2 computes 1.25 x 220 us = 275 us; a healthy rank 220 us and waits for it: bucket 1
  // from 150 (its half 1 done) to 187.5, bucket 2 from 217.5 (its stream free after bucket 1; its
  // half 2 was done at 200) to 250.
  EXPECT_NEAR(rep.ranks[2].compute.us(), 275.0, 1e-5);
  EXPECT_NEAR(rep.ranks[0].compute.us(), 220.0, 1e-5);
  EXPECT_NEAR(rep.ranks[0].peer_wait.us(), (187.5 - 150.0) + (250.0 - 217.5), 1e-5);
}

TEST(Stragglers, TheDegradedBlockReadsEachTargetAndNamesIt) {
  const auto s = two_nodes({{"degraded",
                             "[{gpu: 5, compute: 0.8}, {node: 1, compute: 0.9}, "
                             "{nic_of_gpu: 3, bandwidth: 0.5}]"}});
  ASSERT_EQ(s.degraded.size(), 3u);
  EXPECT_EQ(s.degraded[0].describe(), "gpu 5 compute 0.8x");
  EXPECT_EQ(s.degraded[1].describe(), "node 1 compute 0.9x");
  EXPECT_EQ(s.degraded[2].describe(), "NIC of gpu 3 bandwidth 0.5x");
  // Rates by GPU: 5 at 0.8, node 1's GPUs (8-15) at 0.9, the rest 1 (the NIC is no compute).
  const auto rates = scenario::compute_rates(s, scenario::build_topology(s));
  ASSERT_EQ(rates.size(), 16u);
  EXPECT_EQ(rates[0], 1.0);
  EXPECT_EQ(rates[5], 0.8);
  EXPECT_EQ(rates[8], 0.9);
  EXPECT_EQ(rates[15], 0.9);
  EXPECT_TRUE(scenario::compute_rates(two_nodes(), scenario::build_topology(two_nodes())).empty());
}

TEST(Stragglers, BadEntriesSayWhatIsValid) {
  EXPECT_NE(error_of("[{gpu: 16, compute: 0.8}]")
                .find("degraded[0].gpu: '16' is not a GPU of this cluster: it has 16 GPUs, "
                      "numbered 0 to 15"),
            std::string::npos);
  EXPECT_NE(error_of("[{node: 2, compute: 0.8}]").find("it has 2 nodes, numbered 0 to 1"),
            std::string::npos);
  EXPECT_NE(error_of("[{gpu: 1, compute: 1.5}]")
                .find("degraded[0].compute: expected a number in (0, 1], the fraction of its "
                      "healthy compute, got '1.5'"),
            std::string::npos);
  EXPECT_NE(error_of("[{gpu: 1, compute: 0}]").find("expected a number in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of("[{gpu: 1, node: 0, compute: 0.8}]")
                .find("give one of gpu, node or nic_of_gpu per entry"),
            std::string::npos);
  EXPECT_NE(error_of("[{nic_of_gpu: 1, compute: 0.8}]")
                .find("a NIC is degraded in bandwidth, not compute"),
            std::string::npos);
  EXPECT_NE(error_of("[{gpu: 1}]").find("missing required key 'compute'"), std::string::npos);
  EXPECT_NE(error_of("[{gpu: 1, speed: 0.8}]").find("degraded[0].speed: unknown key"),
            std::string::npos);
  // A --set value's refusal names the --set (its value has no place in the file).
  EXPECT_NE(error_of("{gpu: 1, compute: 0.8}")
                .find("--set degraded={gpu: 1, compute: 0.8}: expected a list"),
            std::string::npos);
  // One DGX has no network: its NIC cannot be degraded.
  try {
    two_nodes({{"cluster.nodes", "1"},
               {"layout.dp", "8"},
               {"training.global_batch", "8"},
               {"degraded", "[{nic_of_gpu: 0, bandwidth: 0.5}]"}});
    ADD_FAILURE() << "a NIC of a node without network was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 0's node has no NIC"), std::string::npos) << e.what();
  }
}

TEST(Stragglers, ADegradedNicHalvesItsLinksAndSlowsTheInterNodeAllReduce) {
  const auto healthy = two_nodes();
  const auto degraded = two_nodes({{"degraded", "[{nic_of_gpu: 3, bandwidth: 0.5}]"}});
  const auto th = scenario::build_topology(healthy);
  const auto td = scenario::build_topology(degraded);
  ASSERT_EQ(th.link_count(), td.link_count());
  const auto nic3 = *td.nic_of(3);
  const auto nic4 = *td.nic_of(4);
  int halved = 0;
  for (uint32_t l = 0; l < td.link_count(); ++l) {
    const bool touches = td.link_source(l) == nic3 || td.link_target(l) == nic3;
    EXPECT_DOUBLE_EQ(td.link(l).bandwidth.value, th.link(l).bandwidth.value * (touches ? 0.5 : 1.0))
        << td.link_name(l);
    halved += touches ? 1 : 0;
    if (td.link_source(l) == nic4) {
      EXPECT_EQ(td.link(l).bandwidth, th.link(l).bandwidth);
    }
  }
  EXPECT_GE(halved, 4);  // both directions of the NIC's PCIe and network links
  // A 256 MiB all-reduce over the 16 GPUs crosses the network through every NIC: the ring is as
  // fast as its slowest hop, so halving one NIC slows it, by at most 2x (only the network part
  // of the time doubles; latency and the NVLink hops stay).
  std::vector<ir::RankId> ranks(16);
  for (uint32_t r = 0; r < 16; ++r) ranks[r] = r;
  const driver::Platform ph(healthy), pd(degraded);
  const SimTime t_healthy = driver::simulate_collective(
      ph.costs(), ir::CollectiveType::all_reduce, 256_MiB, ranks, cost::NetworkFidelity::analytic);
  const SimTime t_degraded = driver::simulate_collective(
      pd.costs(), ir::CollectiveType::all_reduce, 256_MiB, ranks, cost::NetworkFidelity::analytic);
  EXPECT_GT(t_degraded, t_healthy);
  EXPECT_LE(t_degraded.seconds(), 2.0 * t_healthy.seconds());
}

// The simulator end to end: GPT-2 Large DDP on 16 GPUs with GPU 5 at 0.8x. Its kernels take
// 1.25x, so its compute time is exactly 1.25x a healthy rank's (no profile: no interference);
// the step grows, by less than 25% (communication is not stretched); and which GPU is slow does
// not matter (the replicas are alike).
TEST(Stragglers, ASlowGpuInADataParallelStep) {
  driver::SimulateOptions o;
  o.with_baseline = false;
  o.ranks = driver::RankMode::all;
  const auto healthy = driver::simulate(two_nodes(), o).report;
  const auto slow5 =
      driver::simulate(two_nodes({{"degraded", "[{gpu: 5, compute: 0.8}]"}}), o).report;
  const auto slow0 =
      driver::simulate(two_nodes({{"degraded", "[{gpu: 0, compute: 0.8}]"}}), o).report;
  EXPECT_NEAR(slow5.ranks[5].compute.seconds(), healthy.ranks[5].compute.seconds() / 0.8, 1e-9);
  EXPECT_EQ(slow5.ranks[4].compute, healthy.ranks[4].compute);
  EXPECT_GT(slow5.step_time, healthy.step_time);
  EXPECT_LT(slow5.step_time.seconds(), healthy.step_time.seconds() / 0.8);
  EXPECT_NEAR(slow5.step_time.seconds(), slow0.step_time.seconds(),
              1e-3 * healthy.step_time.seconds());
}

// With one rank per pipeline stage simulated, a slow GPU of another replica of the first stage
// slows the representative: the same step as when GPU 0 itself is slow.
TEST(Stragglers, ARepresentativeRankStandsForASlowGpuOfItsStage) {
  driver::SimulateOptions o;
  o.with_baseline = false;
  o.ranks = driver::RankMode::representative;
  const std::vector<scenario::KeyOverride> pipeline{{"layout.pp", "2"}, {"layout.dp", "8"}};
  auto with = [&](const std::string& degraded) {
    auto set = pipeline;
    set.push_back({"degraded", degraded});
    return driver::simulate(two_nodes(set), o).report.step_time;
  };
  const auto s = two_nodes(pipeline);
  int same_stage = -1;
  for (int r = 1; r < s.gpus && same_stage < 0; ++r)
    if (strategy::coord_of(s.layout, r).pp == 0) same_stage = r;
  ASSERT_GT(same_stage, 0);
  const SimTime healthy = driver::simulate(s, o).report.step_time;
  const SimTime slow0 = with("[{gpu: 0, compute: 0.8}]");
  EXPECT_GT(slow0, healthy);
  EXPECT_EQ(with("[{gpu: " + std::to_string(same_stage) + ", compute: 0.8}]"), slow0);
}

TEST(Stragglers, TheAnalysisSlowsOneGpuOneNodeAndOneNic) {
  const auto s = two_nodes();
  driver::SimulateOptions o;
  o.with_baseline = false;
  const SimTime healthy = driver::simulate(s, o).report.step_time;
  const auto r = workflows::analyse_stragglers(s, healthy, o);
  ASSERT_EQ(r.cases.size(), 3u);
  EXPECT_EQ(r.cases[0].degradation.describe(), "gpu 0 compute 0.8x");
  EXPECT_EQ(r.cases[1].degradation.describe(), "node 0 compute 0.8x");
  EXPECT_EQ(r.cases[2].degradation.describe(), "NIC of gpu 0 bandwidth 0.5x");
  for (const auto& c : r.cases) {
    EXPECT_GT(c.slowdown, 0.0) << c.degradation.describe();
    EXPECT_DOUBLE_EQ(c.slowdown, c.step_time.seconds() / healthy.seconds() - 1.0);
  }
  // Compute only stretches by 1 / 0.8: neither compute case can slow the step by 25% or more;
  // a whole slow node is no faster than one slow GPU of it.
  EXPECT_LT(r.cases[0].slowdown, 0.25);
  EXPECT_LT(r.cases[1].slowdown, 0.25);
  EXPECT_GE(r.cases[1].step_time, r.cases[0].step_time);
  // One node: no node or NIC case (a whole-cluster slowdown is no straggler).
  const auto one =
      two_nodes({{"cluster.nodes", "1"}, {"layout.dp", "8"}, {"training.global_batch", "8"}});
  EXPECT_EQ(workflows::straggler_cases(one).size(), 1u);
}

TEST(Stragglers, LayoutsRankByTheirWorstCaseLeastFirst) {
  const std::vector<scenario::Scenario> layouts{
      two_nodes(), two_nodes({{"layout.data_parallel", "fsdp_full_shard"}})};
  const auto ranked = workflows::rank_by_straggler_robustness(layouts, 2);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_NE(ranked[0].index, ranked[1].index);
  EXPECT_TRUE(ranked[0].error.empty() && ranked[1].error.empty());
  EXPECT_LE(ranked[0].stragglers.worst_slowdown(), ranked[1].stragglers.worst_slowdown());
  EXPECT_EQ(ranked[0].stragglers.cases.size(), 3u);
}

}  // namespace
}  // namespace cs
