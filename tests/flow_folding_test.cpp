// Flow level with representative ranks: a representative flow carries its unsimulated copies'
// load on shared links (sim::ReplicaFolding), so a folded step equals the fully simulated one.
#include <gtest/gtest.h>

#include <string>

#include "driver/simulation.h"
#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

TEST(FlowFolding, ShiftsAdvanceEachDigitCyclically) {
  // Ranks numbered tp + 4 dp (tp 4, dp 3): axes (stride 1, extent 4) and (stride 4, extent 3).
  const sim::RankSymmetry s{{{1, 4}, {4, 3}}};
  EXPECT_EQ(s.count(), 12u);
  EXPECT_EQ(s.image(0, 0), 0u);  // the identity
  // Shift 5 = tp + 1 (5 % 4), dp + 1 (5 / 4): rank 0 (tp 0, dp 0) -> tp 1, dp 1 = 5.
  EXPECT_EQ(s.image(0, 5), 5u);
  // Rank 11 (tp 3, dp 2) under the same shift wraps both digits: tp 0, dp 0.
  EXPECT_EQ(s.image(11, 5), 0u);
  // Digits above the axes (a pipeline stage at stride 12) are left alone: 12 + 0 -> 12 + 5.
  EXPECT_EQ(s.image(12, 5), 17u);
}

// Links 0 (shared by the copies), 1 and 2 (each rank's own); the one shift swaps ranks 0 and 1.
TEST(FlowFolding, CopiesAddTheirLoadOnKeptLinksOnly) {
  const sim::RankSymmetry swap{{{1, 2}}};
  cost::LinkPlan rep, copy;
  rep.phases.push_back({1.0, {{0, 1.0, 2.0}, {1, 1.0, 2.0}}, 0});
  copy.phases.push_back({1.0, {{0, 1.0, 2.0}, {2, 1.0, 2.0}}, 0});
  auto plan_of = [&](const std::vector<uint32_t>& r) {
    EXPECT_EQ(r, (std::vector<uint32_t>{1}));  // the representative's image
    return &copy;
  };
  sim::ReplicaFolding folding(swap, 3);
  folding.keep(rep);  // links 0 and 1: the representatives' own
  const cost::LinkPlan& f = folding.fold(rep, {0}, false, plan_of);
  ASSERT_EQ(f.phases.size(), 1u);
  // Link 0 carries both: weight 2 + 2 = 4, payload 1 + 1 = 2. Link 1 is the representative's
  // alone. Link 2 (the copy's own) is not kept: it is link 1's image, with the same constraint.
  ASSERT_EQ(f.phases[0].loads.size(), 2u);
  EXPECT_EQ(f.phases[0].loads[0].link, 0u);
  EXPECT_DOUBLE_EQ(f.phases[0].loads[0].weight, 4.0);
  EXPECT_DOUBLE_EQ(f.phases[0].loads[0].bytes, 2.0);
  EXPECT_EQ(f.phases[0].loads[1].link, 1u);
  EXPECT_DOUBLE_EQ(f.phases[0].loads[1].weight, 2.0);
  // Cached: the same plan folds once.
  EXPECT_EQ(&folding.fold(rep, {0}, false, plan_of), &f);

  // Two flows at 10 B/s on link 0 (capacity in payload units: 40 weight-units/s): alone the
  // representative would get 40 / 2 = 20 units/s; folded it gets 40 / 4 = 10, as each of the two
  // materialised flows would by max-min (each 2 weight-units per unit, 40 / (2 + 2)).
  sim::FlowNetwork net({40.0, 1e9, 1e9});
  const auto id = net.start(SimTime{}, 1.0, f.phases[0].loads);
  EXPECT_DOUBLE_EQ(net.rate(id), 10.0);
}

TEST(FlowFolding, AGroupThatIsItsOwnImageIsNotACopy) {
  // The group {0, 1} shifted by the swap is {1, 0}: the same communicator, so nothing is added
  // (and its plan is never asked for).
  const sim::RankSymmetry swap{{{1, 2}}};
  cost::LinkPlan rep;
  rep.phases.push_back({1.0, {{0, 1.0, 1.0}}, 0});
  sim::ReplicaFolding folding(swap, 1);
  folding.keep(rep);
  const cost::LinkPlan& f =
      folding.fold(rep, {0, 1}, true, [](const std::vector<uint32_t>&) -> const cost::LinkPlan* {
        ADD_FAILURE() << "no copy expected";
        return nullptr;
      });
  ASSERT_EQ(f.phases[0].loads.size(), 1u);
  EXPECT_DOUBLE_EQ(f.phases[0].loads[0].weight, 1.0);
}

// A small model on nodes whose traffic crosses an oversubscribed spine: TP 8 inside each DGX H100,
// PP 2 and DP 2 across four nodes, one node per leaf of a 4:1 fat tree. Every data-parallel ring
// and pipeline transfer leaves its node through the leaf's uplink (8 NICs x 50 GB/s / 4 = 100
// GB/s), which it shares with its 7 tensor-parallel copies: the unsimulated copies set the rates.
scenario::Scenario shared_spine_case() {
  auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                   "/scenarios/llama2-7b-16xh100-tp8-dp2-flow.yaml");
  s.model.layers = 4;
  s.nodes = 4;
  s.gpus = 32;
  s.cluster.nodes = 4;
  s.cluster.fabric = {topo::FabricKind::fat_tree, 1, 4.0};
  s.layout.pp = 2;
  s.layout.dp = 2;
  s.training.global_batch = 8;
  return s;
}

TEST(FlowFolding, RepresentativeStepEqualsTheFullySimulatedOne) {
  const scenario::Scenario s = shared_spine_case();
  const driver::SimulateOptions all{
      .with_baseline = false, .suggest = false, .ranks = driver::RankMode::all};
  const driver::SimulateOptions rep{
      .with_baseline = false, .suggest = false, .ranks = driver::RankMode::representative};
  const auto full = driver::simulate(s, all);
  const auto folded = driver::simulate(s, rep);
  ASSERT_EQ(full.step.graph.ranks(), 32u);
  ASSERT_EQ(folded.step.graph.ranks(), 2u);  // one rank per pipeline stage
  // Every shift (tensor index, data index) is an automorphism of this cluster (every GPU has its
  // own PCIe switch and NIC, every node its own leaf), so each copy runs at its representative's
  // rate and the folded constraints are the full ones: the same events at the same times, and the
  // same step to the picosecond here. Only the order in which a link's weights are summed differs
  // (a flow's copies at once, against flow by flow), which could move a flow's end by the
  // rounding of its last picosecond; 1 ns over the step allows for that. Without the copies'
  // load the step is shorter (next test).
  EXPECT_NEAR(static_cast<double>(folded.report.step_time.ps),
              static_cast<double>(full.report.step_time.ps), 1000.0);
  EXPECT_GT(full.report.step_time, SimTime{});
  EXPECT_EQ(folded.report.peak_memory, full.report.peak_memory);
}

TEST(FlowFolding, ExpertParallelReplicasFoldWithinAndAcrossTheirGroups) {
  // Mixtral (two layers) with DP 16 and EP 8 on two DGX H100s, one node per leaf of a 4:1 fat
  // tree: each node is one expert-parallel group (its all-to-alls on NVLink), the expert
  // gradients are reduced between the two nodes' same slots and ZeRO-1 spans all 16. The
  // symmetry shifts a rank within its expert group and across groups separately (a plain shift
  // of the data-parallel index by one would map node 0's group onto ranks 1-8, not a group), and
  // each is an automorphism here: as above, the folded step is the full one.
  auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                   "/scenarios/mixtral-8x7b-16xh100-ep8.yaml");
  s.model.layers = 2;
  s.fidelity = cost::NetworkFidelity::flow;
  s.cluster.fabric = {topo::FabricKind::fat_tree, 1, 4.0};
  s.training.global_batch = 16;
  const auto full = driver::simulate(
      s, {.with_baseline = false, .suggest = false, .ranks = driver::RankMode::all});
  const auto folded = driver::simulate(
      s, {.with_baseline = false, .suggest = false, .ranks = driver::RankMode::representative});
  ASSERT_EQ(folded.step.graph.ranks(), 1u);
  EXPECT_NEAR(static_cast<double>(folded.report.step_time.ps),
              static_cast<double>(full.report.step_time.ps), 1000.0);
  EXPECT_EQ(folded.report.peak_memory, full.report.peak_memory);
}

TEST(FlowFolding, WithoutItsCopiesTheRepresentativeWouldRunFaster) {
  // The same representative graph with no symmetry given: its flows are alone on the uplinks
  // (the 8 copies' share of each is missing), so the step is shorter than the full one. This is
  // what the folding corrects; the test above would fail without it.
  const scenario::Scenario s = shared_spine_case();
  const auto full = driver::simulate(
      s, {.with_baseline = false, .suggest = false, .ranks = driver::RankMode::all});
  const auto folded = driver::simulate(
      s, {.with_baseline = false, .suggest = false, .ranks = driver::RankMode::representative});
  const driver::Platform platform(s);
  const auto step = strategy::build_training_step(s.model, s.layout, s.training, {true});
  const sim::Timeline alone = sim::Engine(step.graph, platform.costs(), s.fidelity).run();
  EXPECT_LT(alone.makespan.seconds(), 0.99 * folded.timeline.makespan.seconds());
  EXPECT_LT(alone.makespan.seconds(), 0.99 * full.timeline.makespan.seconds());
}

}  // namespace
}  // namespace cs
