// A representative graph folds the context-parallel ring to one rank per stage where the ring's
// ranks are images of each other (strategy::StepOptions::fold_context_parallel): the folded step
// is the step of every rank, and rings whose hops differ are emitted whole.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "driver/simulation.h"
#include "fixed_cost_model.h"
#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

// Llama 3.1 405B cut to 4 layers: TP 8 inside each DGX H100, CP 4 across four nodes and PP 2,
// so every ring hop leaves its node through the same kind of NIC and leaf.
scenario::Scenario ring_across_nodes() {
  auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                   "/scenarios/llama3-405b-16384xh100-cp16.yaml");
  s.model.layers = 4;
  s.nodes = s.cluster.nodes = 8;
  s.gpus = 64;
  s.layout.cp = 4;
  s.layout.pp = 2;
  s.layout.dp = 1;
  s.layout.first_stage_layers = s.layout.last_stage_layers = 0;
  s.training.global_batch = 4;
  s.training.seq_len = 32768;
  return s;
}

driver::SimulateOptions with_ranks(driver::RankMode mode) {
  return {.with_baseline = false, .suggest = false, .ranks = mode};
}

TEST(ContextParallelFolding, FoldedRingStepIsEveryRanksStep) {
  const scenario::Scenario s = ring_across_nodes();
  const auto full = driver::simulate(s, with_ranks(driver::RankMode::all));
  const auto folded = driver::simulate(s, with_ranks(driver::RankMode::representative));
  ASSERT_EQ(full.step.graph.ranks(), 64u);
  ASSERT_EQ(folded.step.graph.ranks(), 2u);  // one rank per stage: the ring folded too
  // Each CP rank computes the same load-balanced chunks and each hop costs the same, so every
  // rank's ring step starts when its own send can: the folded rank's receive, paired with its own
  // send, ends when the previous rank's would. Same events at the same times: equal to the ps.
  EXPECT_GT(full.report.step_time, SimTime{});
  EXPECT_EQ(folded.report.step_time, full.report.step_time);
  EXPECT_EQ(folded.report.peak_memory, full.report.peak_memory);

  // The representative graph with the ring emitted whole (what the driver built before): 8 ranks,
  // the same step.
  const driver::Platform platform(s);
  strategy::StepOptions whole;
  whole.representative_ranks = true;
  const auto step = strategy::build_training_step(s.model, s.layout, s.training, whole);
  ASSERT_EQ(step.graph.ranks(), 8u);
  EXPECT_EQ(sim::Engine(step.graph, platform.costs(), s.fidelity).run().makespan,
            full.report.step_time);
}

TEST(ContextParallelFolding, RingWithHopsInsideAndAcrossNodesIsEmittedWhole) {
  // TP 2 x CP 8 on 8-GPU nodes: the ring 0, 2, ..., 14 spans two nodes; hops 0 -> 2, 2 -> 4 and
  // 4 -> 6 run over NVLink, 6 -> 8 and 14 -> 0 over the network. The ranks after those hops wait
  // longer, so no rank stands for the others and the ring is emitted whole.
  scenario::Scenario s = ring_across_nodes();
  s.layout.tp = 2;
  s.layout.cp = 8;
  s.layout.pp = 1;
  s.layout.dp = 4;
  s.layout.sequence_parallel = true;
  s.training.global_batch = 4;
  const auto rep = driver::simulate(s, with_ranks(driver::RankMode::representative));
  EXPECT_EQ(rep.step.graph.ranks(), 8u);  // pp x cp
}

TEST(ContextParallelFolding, FlowLevelEmitsTheRingWhole) {
  // At the flow level the ring's hops share links with each other's traffic (not folded there).
  scenario::Scenario s = ring_across_nodes();
  s.fidelity = cost::NetworkFidelity::flow;
  const auto rep = driver::simulate(s, with_ranks(driver::RankMode::representative));
  EXPECT_EQ(rep.step.graph.ranks(), 8u);  // pp x cp
}

TEST(ContextParallelFolding, AReceiveOnItsSenderNeedsAnUnsimulatedDestination) {
  // Graph rank 0 stands for cluster rank 0 of 2. Its send to cluster rank 1 and the receive paired
  // with it, on rank 0 too: a 7 us transfer (FixedCostModel: bytes as us) after a 3 us op ends at
  // 10 us.
  ir::TaskGraph g(1);
  g.set_cluster_ranks({0}, 2);
  const auto s = g.add_stream("compute"), tx_stream = g.add_stream("send"),
             rx_stream = g.add_stream("recv");
  const auto x = g.new_transfer(0, 1, Bytes{7});
  const auto op = g.add_compute(0, s, test::op_us(3), g.label("op", ir::Phase::forward));
  const auto send = g.add_send(0, tx_stream, x, g.label("send", ir::Phase::forward));
  g.add_dependency(op, send);
  g.add_recv(0, rx_stream, x, g.label("recv", ir::Phase::forward));
  g.finalize();
  const test::FixedCostModel costs;
  EXPECT_EQ(sim::Engine(g, costs).run().makespan, SimTime::from_us(10));

  // With both ranks simulated the receive belongs on rank 1: on rank 0 it is refused.
  ir::TaskGraph whole(2);
  const auto ws = whole.add_stream("compute");
  const auto wx = whole.new_transfer(0, 1, Bytes{7});
  whole.add_send(0, ws, wx, whole.label("send", ir::Phase::forward));
  whole.add_recv(0, ws, wx, whole.label("recv", ir::Phase::forward));
  EXPECT_THROW(whole.finalize(), std::logic_error);
}

}  // namespace
}  // namespace cs
