// Network fidelity: collective bandwidths against published NCCL figures, the vTrain A100
// all-reduce curves, algorithm/protocol choice, and link sharing at the flow level.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "cost_models/analytic_cost_model.h"
#include "driver/simulation.h"
#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/report.h"
#include "test_paths.h"
#include "topology/cluster_spec.h"

namespace cs {
namespace {

using ir::CollectiveType;

std::vector<ir::RankId> first_ranks(int n, int from = 0) {
  std::vector<ir::RankId> r;
  for (int i = 0; i < n; ++i) r.push_back(static_cast<ir::RankId>(from + i));
  return r;
}

cost::CollectiveOptions forced(std::optional<cost::Algorithm> a,
                               std::optional<cost::Protocol> p = std::nullopt,
                               bool strict = false) {
  return {a, p, strict};
}

cost::AnalyticCostModel costs_for(const topo::Topology& t, const std::string& gpu,
                                  cost::CollectiveOptions o = {}) {
  const cost::DeviceSpec& d = cost::find_device(gpu);
  return {cost::ComputeModel(d), cost::CollectiveModel(t, driver::collective_params(d), o)};
}

// nccl-tests' bus bandwidth in GB/s from the engine's time for one collective.
double busbw(const cost::CostModel& c, CollectiveType type, Bytes size,
             const std::vector<ir::RankId>& ranks,
             cost::NetworkFidelity f = cost::NetworkFidelity::analytic) {
  const SimTime t = driver::simulate_collective(c, type, size, ranks, f);
  return static_cast<double>(size.count) / t.seconds() *
         cost::CollectiveModel::bus_factor(type, ranks.size()) * 1e-9;
}

constexpr Bytes kGiB{int64_t{1} << 30};

// --- acceptance 1: 8x H100 in a DGX H100 -------------------------------------------------------

TEST(NcclFigures, DgxH100RingAndNvlsBusBandwidthAt1GiB) {
  const topo::Topology t = topo::build_preset("dgx_h100", 1);
  const auto eight = first_ranks(8);
  // Ring, forced as NCCL_ALGO=Ring: each GPU's NVLink egress carries 2(n-1)/n S of bus bytes and
  // also pays two unhidden buffer passes (2S at 0.54 x 3.35 TB/s = 1809 GB/s), i.e. per bus byte
  // 1/450 + (8/7)/1809 s/GB -> 351.8 GB/s, less the 53.2 us of latency (launch 5.6 + 14 NCCL 2.28
  // NVLink Simple steps x 3.4) over 5.4 ms: ~347 GB/s busbw. Target ~370 GB/s (NCCL maintainers):
  // -6%.
  const auto ring = costs_for(t, "h100_sxm", forced(cost::Algorithm::ring, std::nullopt, true));
  const double ar_ring = busbw(ring, CollectiveType::all_reduce, kGiB, eight);
  EXPECT_NEAR(ar_ring, 370.0, 37.0);
  EXPECT_NEAR(ar_ring, 346.9, 1.0);  // the derivation above, to catch drift
  // all_gather / reduce_scatter: (n-1)/n S bus bytes and one pass over S -> same 351.8 GB/s per
  // bus byte, less 29.4 us of latency (5.6 + 7 x 3.4) over 2.7 ms: ~348 GB/s, against the same
  // ~370.
  EXPECT_NEAR(busbw(ring, CollectiveType::all_gather, kGiB, eight), 370.0, 37.0);
  EXPECT_NEAR(busbw(ring, CollectiveType::reduce_scatter, kGiB, eight), 370.0, 37.0);
  // NVLS: S into and S out of the switch per GPU at 256/450 x 450 = 256 GB/s algbw (fitted on the
  // 8x H100 nccl-tests table, collective_algorithms.h) -> busbw 448 GB/s, less 66.6 us of latency
  // (5.6 + 25 + 36) over 4.2 ms: ~441. Target ~480 (NCCL maintainers, largest sizes): -8%.
  const auto nvls = costs_for(t, "h100_sxm", forced(cost::Algorithm::nvls, std::nullopt, true));
  EXPECT_NEAR(busbw(nvls, CollectiveType::all_reduce, kGiB, eight), 480.0, 48.0);
  // Left to choose, the model takes NVLS for a 1 GiB all-reduce, as NCCL does on H100.
  const auto automatic = costs_for(t, "h100_sxm");
  EXPECT_EQ(
      automatic.collective_model().choose(CollectiveType::all_reduce, kGiB, eight).plan->algorithm,
      cost::Algorithm::nvls);
}

// --- acceptance 2: two DGX H100 nodes over NDR ---------------------------------------------------

TEST(NcclFigures, TwoDgxH100NodesRingBusBandwidthPerNic) {
  const topo::Topology t = topo::build_preset("dgx_h100", 2);
  const auto sixteen = first_ranks(16);
  const auto ring =
      costs_for(t, "h100_sxm", forced(cost::Algorithm::ring, cost::Protocol::simple, true));
  const auto& plan =
      *ring.collective_model().choose(CollectiveType::all_reduce, kGiB, sixteen).plan;
  EXPECT_EQ(plan.channels, 8);  // one ring per NIC, each on its own rail
  // Each channel's ring leaves a node through one NDR NIC (50 x 0.95 = 47.5 GB/s) carrying 1/8 of
  // the bus bytes: the network allows 8 x 47.5 = 380 GB/s. The GPUs' NVLink side allows
  // 1 / (1/450 + (16/15)/1809) = 355.6 GB/s, so it binds; with 193 us of latency over 5.85 ms,
  // busbw = 343.9 GB/s, 43.0 GB/s per NIC: inside 10% of the 46-49 GB/s measured for NDR.
  const double per_nic = busbw(ring, CollectiveType::all_reduce, kGiB, sixteen) / 8;
  EXPECT_GE(per_nic, 46.0 * 0.9);
  EXPECT_LE(per_nic, 49.0 * 1.1);
  // Two GPUs on two nodes: one NIC each, no NVLink hop: S (bus bytes = S for n = 2) at 47.5 GB/s
  // plus the plan's latency: launch 5.6 + 2 network steps x 14 us (NCCL 2.28, one GPU per node: the
  // tree's network Simple figure) = 33.6 us.
  const std::vector<ir::RankId> pair{0, 8};
  const SimTime pair_latency =
      ring.collective_model().choose(CollectiveType::all_reduce, kGiB, pair).plan->latency;
  EXPECT_EQ(pair_latency, SimTime::from_us(33.6));
  const double expected = static_cast<double>(kGiB.count) /
                          (static_cast<double>(kGiB.count) / 47.5e9 + pair_latency.seconds()) *
                          1e-9;
  EXPECT_NEAR(busbw(ring, CollectiveType::all_reduce, kGiB, pair), expected, 0.01);
}

// --- topologies ----------------------------------------------------------------------------------

TEST(Topologies, PcieBoxRoutesAndTheRingBottleneck) {
  const topo::Topology t = topo::build_preset("pcie_8x_h100", 1);
  auto kinds = [&](int a, int b) {
    std::string k;
    for (uint32_t l : t.route(a, b).links) k += std::string(topo::to_string(t.link(l).kind)) + " ";
    return k;
  };
  EXPECT_EQ(kinds(0, 1), "pcie pcie ");                   // both under PCIe switch 0
  EXPECT_EQ(kinds(0, 2), "pcie pcie pcie pcie ");         // up to the root complex and down
  EXPECT_EQ(kinds(0, 4), "pcie pcie socket pcie pcie ");  // across the two sockets
  const topo::Topology pairs = topo::build_preset("nvlink_pairs_8x_h100", 1);
  EXPECT_EQ(pairs.route(0, 1).links.size(), 1u);  // the NVLink bridge
  EXPECT_EQ(pairs.link(pairs.route(0, 1).links[0]).kind, topo::LinkKind::nvlink);
  // GPU-NIC affinity (two nodes, so the NICs exist): NIC i under PCIe switch i, so GPUs 2i and
  // 2i+1 share NIC i.
  const topo::Topology two = topo::build_preset("pcie_8x_h100", 2);
  ASSERT_TRUE(two.nic_of(1).has_value());
  EXPECT_EQ(two.nic_of(0), two.nic_of(1));
  EXPECT_NE(two.nic_of(1), two.nic_of(2));
  EXPECT_EQ(two.device(*two.nic_of(3)).name, "n0.nic1");
  // Ring over 8 GPUs in rank order: hop 3 -> 4 crosses cpu0 -> cpu1 and hop 7 -> 0 comes back, each
  // on a 64 GB/s x 0.70 = 44.8 GB/s socket link; PCIe links give 63 x 0.76 = 47.9 GB/s (a GPU's
  // egress 45.6 with the buffer passes). So the socket binds: busbw -> 44.8 GB/s less latency.
  const auto c = costs_for(t, "h100_pcie", forced(cost::Algorithm::ring, cost::Protocol::simple));
  const auto eight = first_ranks(8);
  const auto& plan = *c.collective_model().choose(CollectiveType::all_reduce, kGiB, eight).plan;
  const double seconds = 1.75 * static_cast<double>(kGiB.count) / 44.8e9 + plan.latency.seconds();
  EXPECT_NEAR(busbw(c, CollectiveType::all_reduce, kGiB, eight),
              1.75 * static_cast<double>(kGiB.count) / seconds * 1e-9, 0.01);
}

// --- acceptance 3: vTrain's measured A100 all-reduce curves --------------------------------------

struct Row {
  int gpus;
  int64_t bytes;
  double seconds;
};

std::vector<Row> read_vtrain() {
  std::vector<Row> rows;
  for (int n = 2; n <= 8; ++n) {
    const std::string path = cs::test_paths::source_dir() +
                             "/validate/data/vtrain_a100_allreduce/allreduce_" + std::to_string(n) +
                             "gpu.csv";
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::string size, count, type, oop_ns;
      std::getline(ss, size, ',');
      std::getline(ss, count, ',');
      std::getline(ss, type, ',');
      std::getline(ss, oop_ns, ',');
      rows.push_back({n, std::stoll(size), std::stod(oop_ns) * 1e-9});
    }
  }
  return rows;
}

constexpr double kVTrainA100LaunchOverheadUs = 46.6;

TEST(VTrainAllReduce, MeanAbsolutePercentageErrorAtMostTenPercent) {
  // Every out-of-place row (7 group sizes x 1,024 sizes), predicted by the default model on the
  // dgx_a100 preset with no per-size fitting. The model's three fitted constants (46.6 us launch
  // overhead of that system, NVLink efficiency 1.0, buffer passes at 0.54 of HBM bandwidth) are
  // global.
  const std::vector<Row> rows = read_vtrain();
  ASSERT_EQ(rows.size(), 7u * 1024u);
  const topo::Topology t = topo::build_preset("dgx_a100", 1);
  // The vTrain system's launch overhead: its 40 us fit plus the 6.6 us of NCCL's ring LL base
  // latency that the model then added (the model now prices the fixed part as one launch overhead,
  // 5.6 us by default from the 8x H100 nccl-tests fit; this A100 system's launch path was slower).
  const cost::DeviceSpec& a100 = cost::find_device("a100_sxm_80gb");
  cost::CollectiveParams params = driver::collective_params(a100);
  params.launch_overhead = SimTime::from_us(kVTrainA100LaunchOverheadUs);
  const cost::AnalyticCostModel c{cost::ComputeModel(a100), cost::CollectiveModel(t, params)};
  double sum = 0, worst = 0;
  std::vector<double> per_n(9, 0.0);
  for (const Row& r : rows) {
    const double predicted =
        c.collective_model()
            .time(CollectiveType::all_reduce, Bytes{r.bytes}, first_ranks(r.gpus))
            .seconds();
    const double err = std::abs(predicted - r.seconds) / r.seconds;
    sum += err;
    per_n[static_cast<size_t>(r.gpus)] += err / 1024;
    worst = std::max(worst, err);
  }
  const double mape = 100 * sum / static_cast<double>(rows.size());
  std::printf("vTrain A100 all-reduce: MAPE %.2f%% over %zu rows, worst %.1f%%; by GPUs:", mape,
              rows.size(), 100 * worst);
  for (int n = 2; n <= 8; ++n) std::printf(" %d:%.1f%%", n, 100 * per_n[static_cast<size_t>(n)]);
  std::printf("\n");
  EXPECT_LE(mape, 10.0);
  for (int n = 2; n <= 8; ++n) EXPECT_LE(per_n[static_cast<size_t>(n)], 0.10) << n << " GPUs";
}

// --- algorithm and protocol choice
// -----------------------------------------------------------------

TEST(NcclChoice, ProtocolFollowsSizeAndForcingIsHonoured) {
  const topo::Topology t = topo::build_preset("dgx_a100", 1);
  const auto c = costs_for(t, "a100_sxm_80gb");
  const auto& m = c.collective_model();
  const auto eight = first_ranks(8);
  // LL's 0.6 us steps win when there is almost nothing to move; LL128 in the middle; Simple's
  // full bandwidth once the buffer dominates (A100: no NVLS, one node: no tree).
  EXPECT_EQ(m.choose(CollectiveType::all_reduce, Bytes{4096}, eight).plan->protocol,
            cost::Protocol::ll);
  EXPECT_EQ(m.choose(CollectiveType::all_reduce, Bytes{16 << 20}, eight).plan->protocol,
            cost::Protocol::ll128);
  EXPECT_EQ(m.choose(CollectiveType::all_reduce, kGiB, eight).plan->protocol,
            cost::Protocol::simple);
  for (const auto& p : {m.choose(CollectiveType::all_reduce, kGiB, eight).plan})
    EXPECT_EQ(p->algorithm, cost::Algorithm::ring);
  // Forcing LL at 1 GiB: a quarter of Simple's link rate (plus the same passes), so much slower.
  const auto ll = costs_for(t, "a100_sxm_80gb", forced(std::nullopt, cost::Protocol::ll));
  EXPECT_GT(ll.collective_model().time(CollectiveType::all_reduce, kGiB, eight).seconds(),
            2.5 * m.time(CollectiveType::all_reduce, kGiB, eight).seconds());
  // Strict forcing of an algorithm that cannot run the collective says why.
  const auto strict =
      costs_for(t, "a100_sxm_80gb", forced(cost::Algorithm::nvls, std::nullopt, true));
  try {
    strict.collective_model().choose(CollectiveType::all_reduce, kGiB, eight);
    ADD_FAILURE() << "nvls on A100 should be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("NVSwitch gen 3"), std::string::npos) << e.what();
  }
  // Not strict (a training job): it falls back to the automatic choice.
  const auto lenient = costs_for(t, "a100_sxm_80gb", forced(cost::Algorithm::nvls));
  EXPECT_EQ(
      lenient.collective_model().choose(CollectiveType::all_reduce, kGiB, eight).plan->algorithm,
      cost::Algorithm::ring);
}

TEST(NcclChoice, HierarchicalHasThreePhasesAndMovesTheSameInterNodeBytes) {
  const topo::Topology t = topo::build_preset("dgx_h100", 2);
  const auto sixteen = first_ranks(16);
  const auto h =
      costs_for(t, "h100_sxm", forced(cost::Algorithm::hierarchical, cost::Protocol::simple, true));
  const auto& plan = *h.collective_model().choose(CollectiveType::all_reduce, kGiB, sixteen).plan;
  ASSERT_EQ(plan.phases.size(), 3u);
  // Phase 2 is an all-reduce of S/8 among 2 nodes per rail: 2(N-1)/N / L = 1/8 unit per byte, and
  // each NIC carries it once: 1/8 S per direction, as the flat ring's 8 channels do.
  EXPECT_DOUBLE_EQ(plan.phases[1].units_per_byte, 1.0 / 8);
  // Not pipelined, so slower than the flat ring for one big buffer.
  const auto ring = costs_for(t, "h100_sxm", forced(cost::Algorithm::ring, cost::Protocol::simple));
  EXPECT_GT(plan.time(kGiB),
            ring.collective_model().time(CollectiveType::all_reduce, kGiB, sixteen));
}

// --- acceptance 4: flow-level sharing
// --------------------------------------------------------------

// Collectives started together at t = 0, each on its own stream so they overlap; returns the end
// of each (all members end together).
std::vector<SimTime> run_together(
    const cost::CostModel& c, uint32_t ranks,
    const std::vector<std::pair<CollectiveType, std::vector<ir::RankId>>>& calls, Bytes size,
    cost::NetworkFidelity f, sim::Timeline* out = nullptr) {
  ir::TaskGraph g(ranks);
  std::vector<ir::TaskId> first_task;
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto stream = g.add_stream("s" + std::to_string(i));
    const auto call = g.new_collective(calls[i].first, size, g.group(calls[i].second));
    bool first = true;
    for (ir::RankId r : calls[i].second) {
      const auto t =
          g.add_collective(r, stream, call, g.label("c" + std::to_string(i), ir::Phase::other));
      if (first) first_task.push_back(t);
      first = false;
    }
  }
  g.finalize();
  sim::Timeline tl = sim::Engine(g, c, f).run();
  std::vector<SimTime> ends;
  for (ir::TaskId t : first_task) ends.push_back(tl.tasks[t].end);
  if (out) *out = std::move(tl);
  return ends;
}

TEST(FlowLevel, RingsSharingEveryLinkTakeTwiceAsLong) {
  const topo::Topology t = topo::build_preset("dgx_h100", 1);
  const auto c = costs_for(t, "h100_sxm", forced(cost::Algorithm::ring, cost::Protocol::simple));
  const auto eight = first_ranks(8);
  const SimTime latency =
      c.collective_model().choose(CollectiveType::all_reduce, kGiB, eight).plan->latency;
  const SimTime alone = run_together(c, 8, {{CollectiveType::all_reduce, eight}}, kGiB,
                                     cost::NetworkFidelity::flow)[0];
  // The flow level alone equals the closed form (to the picosecond it rounds up).
  EXPECT_NEAR(
      static_cast<double>(alone.ps),
      static_cast<double>(c.collective_model().time(CollectiveType::all_reduce, kGiB, eight).ps),
      1.0);
  // Two identical rings on the same GPUs load every link with the same weight: max-min gives
  // each half of every link, so the bandwidth part doubles (latency is paid once each).
  const auto both =
      run_together(c, 8, {{CollectiveType::all_reduce, eight}, {CollectiveType::all_reduce, eight}},
                   kGiB, cost::NetworkFidelity::flow);
  for (SimTime end : both)
    EXPECT_NEAR((end - latency).seconds(), 2 * (alone - latency).seconds(), 1e-9);
  // The analytic level does not share: each takes the time it takes alone.
  const auto analytic =
      run_together(c, 8, {{CollectiveType::all_reduce, eight}, {CollectiveType::all_reduce, eight}},
                   kGiB, cost::NetworkFidelity::analytic);
  EXPECT_NEAR(static_cast<double>(analytic[0].ps), static_cast<double>(alone.ps), 1.0);
}

TEST(FlowLevel, RingsOnDisjointLinksDoNotSlowEachOther) {
  const topo::Topology t = topo::build_preset("dgx_h100", 1);
  const auto c = costs_for(t, "h100_sxm", forced(cost::Algorithm::ring, cost::Protocol::simple));
  // GPUs 0-3 and 4-7 each use their own NVLink ports to the switch plane (non-blocking): the two
  // 4-GPU rings share no link.
  const SimTime alone = run_together(c, 8, {{CollectiveType::all_reduce, first_ranks(4)}}, kGiB,
                                     cost::NetworkFidelity::flow)[0];
  const auto both = run_together(c, 8,
                                 {{CollectiveType::all_reduce, first_ranks(4)},
                                  {CollectiveType::all_reduce, first_ranks(4, 4)}},
                                 kGiB, cost::NetworkFidelity::flow);
  EXPECT_EQ(both[0], alone);
  EXPECT_EQ(both[1], alone);
}

// 4 one-GPU nodes with one NDR NIC each, two nodes per leaf of a fat tree.
topo::ClusterSpec four_small_nodes(double oversubscription) {
  topo::ClusterSpec s = topo::preset_with_nodes("dgx_h100", 4);
  s.node.gpus = 1;
  s.node.nics = 1;
  s.fabric = {topo::FabricKind::fat_tree, 2, oversubscription};
  return s;
}

TEST(FlowLevel, TwoToOneOversubscribedSpineHalvesCrossLeafBandwidth) {
  // Nodes 0 and 1 hang off leaf 0, nodes 2 and 3 off leaf 1. Transfers 0 -> 2 and 1 -> 3 both
  // cross leaf 0's uplink. Each NIC gives 47.5 GB/s (0.95 x 50). Uplink at 1:1 = 2 x 50 x 0.95 =
  // 95 GB/s: both run at the NIC's 47.5. At 2:1 the uplink is 47.5 GB/s for both: 23.75 each.
  auto rate_of_concurrent_transfers = [](double oversubscription) {
    const topo::Topology t = topo::build_cluster(four_small_nodes(oversubscription));
    const auto c = costs_for(t, "h100_sxm");
    ir::TaskGraph g(4);
    const auto s0 = g.add_stream("p2p0");
    const auto s1 = g.add_stream("p2p1");
    const auto x0 = g.new_transfer(0, 2, kGiB);
    const auto x1 = g.new_transfer(1, 3, kGiB);
    const auto send0 = g.add_send(0, s0, x0, g.label("send", ir::Phase::other));
    g.add_recv(2, s0, x0, g.label("recv", ir::Phase::other));
    g.add_send(1, s1, x1, g.label("send", ir::Phase::other));
    g.add_recv(3, s1, x1, g.label("recv", ir::Phase::other));
    g.finalize();
    const sim::Timeline tl = sim::Engine(g, c, cost::NetworkFidelity::flow).run();
    const SimTime latency = c.collective_model().p2p(0, 2, kGiB).plan->latency;
    return static_cast<double>(kGiB.count) / (tl.tasks[send0].end - latency).seconds() * 1e-9;
  };
  EXPECT_NEAR(rate_of_concurrent_transfers(1.0), 47.5, 0.01);
  EXPECT_NEAR(rate_of_concurrent_transfers(2.0), 23.75, 0.01);
}

TEST(FlowLevel, MaxMinFairnessGivesTheUnconstrainedFlowTheLeftover) {
  // Links: A (10 GB/s), B (4 GB/s). Flow 1 uses A and B, flow 2 uses A only. Progressive filling:
  // both grow to 4 (B full, flow 1 frozen), flow 2 takes A's remaining 2 -> 6.
  sim::FlowNetwork net({10e9, 4e9});
  const std::vector<cost::LinkLoad> both{{0, 1, 1}, {1, 1, 1}}, a_only{{0, 1, 1}};
  const auto f1 = net.start(SimTime{}, 1e9, both);
  const auto f2 = net.start(SimTime{}, 1e9, a_only);
  EXPECT_DOUBLE_EQ(net.rate(f1), 4e9);
  EXPECT_DOUBLE_EQ(net.rate(f2), 6e9);
  // Flow 2 ends first (1 GB at 6 GB/s = 166.67 ms); flow 1 then runs alone, still capped by B.
  const auto done = net.advance(net.next_completion());
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f2);
  EXPECT_DOUBLE_EQ(net.rate(f1), 4e9);
}

// --- acceptance 5: TP inside the node, DP across nodes
// ---------------------------------------------

TEST(FlowLevel, DataParallelAcrossNodesIsSlowedOnlyWhereItSharesLinksWithTensorParallel) {
  const topo::Topology t = topo::build_preset("dgx_h100", 2);
  const auto c = costs_for(t, "h100_sxm", forced(cost::Algorithm::ring, cost::Protocol::simple));
  const auto flow = cost::NetworkFidelity::flow;
  const auto tp0 = first_ranks(8), tp1 = first_ranks(8, 8);
  // DP group {0, 8}: GPU -> PCIe -> NIC -> leaf -> NIC -> PCIe -> GPU. TP rings use NVLink only.
  const std::vector<ir::RankId> dp{0, 8};
  const SimTime dp_alone = run_together(c, 16, {{CollectiveType::all_reduce, dp}}, kGiB, flow)[0];
  sim::Timeline tl;
  const auto with_tp = run_together(c, 16,
                                    {{CollectiveType::all_reduce, dp},
                                     {CollectiveType::all_reduce, tp0},
                                     {CollectiveType::all_reduce, tp1}},
                                    kGiB, flow, &tl);
  const SimTime tp_alone = run_together(c, 16, {{CollectiveType::all_reduce, tp0}}, kGiB, flow)[0];
  EXPECT_EQ(with_tp[0], dp_alone);  // no shared link: neither is slowed
  EXPECT_EQ(with_tp[1], tp_alone);
  // DP group {0, 1, 8, 9}: its hops 0 -> 1 and 8 -> 9 (and the PXN hand-overs) run on NVLink
  // beside the TP rings. The TP rings, NVLink-bound, slow down; the DP ring is bound by its two
  // NICs per node (95 GB/s), which nobody else uses, and max-min leaves it that rate.
  const std::vector<ir::RankId> dp2{0, 1, 8, 9};
  const SimTime dp2_alone = run_together(c, 16, {{CollectiveType::all_reduce, dp2}}, kGiB, flow)[0];
  const auto shared = run_together(c, 16,
                                   {{CollectiveType::all_reduce, dp2},
                                    {CollectiveType::all_reduce, tp0},
                                    {CollectiveType::all_reduce, tp1}},
                                   kGiB, flow);
  EXPECT_EQ(shared[0], dp2_alone);
  EXPECT_GT(shared[1], tp_alone);
  // Sharing its bottleneck does slow it: {0, 9} leaves node 0 through the same NIC as {0, 8}
  // (GPU 0's), so the two split that NIC's 47.5 GB/s.
  const auto same_nic = run_together(
      c, 16, {{CollectiveType::all_reduce, dp}, {CollectiveType::all_reduce, {0, 9}}}, kGiB, flow);
  EXPECT_GT(same_nic[0].seconds(), 1.9 * dp_alone.seconds());
  // The run's per-link record: the NICs carried the DP bytes (1 GiB all-reduce of 2 ranks: each
  // sends 2(n-1)/n S = S), the NVLink ports the TP bytes (2 x 7/8 S each per GPU).
  sim::WorkloadFacts facts;
  std::vector<sim::LinkInfo> links;
  for (uint32_t l = 0; l < t.link_count(); ++l) links.push_back({topo::to_string(t.link(l).kind)});
  facts.links = &links;
  tl.makespan = with_tp[0];
  ir::TaskGraph empty(1);
  empty.finalize();
  tl.tasks.clear();
  tl.memory.assign(1, {});
  sim::Report rep = sim::make_report(empty, tl, facts);
  ASSERT_TRUE(rep.link_kinds.count("infiniband"));
  ASSERT_TRUE(rep.link_kinds.count("nvlink"));
  EXPECT_DOUBLE_EQ(rep.link_kinds.at("infiniband").bytes,
                   4.0 * static_cast<double>(kGiB.count));  // 2 NICs x up + down
  EXPECT_DOUBLE_EQ(rep.link_kinds.at("nvlink").bytes,
                   16 * 2 * 1.75 * static_cast<double>(kGiB.count));
  // The DP ring is NIC-bound and alone on its NICs for the whole step: utilisation ~1.
  EXPECT_NEAR(rep.link_kinds.at("infiniband").max_utilisation, 1.0, 0.01);
}

TEST(FlowLevel, TrainingStepIsDeterministicAndNoFasterThanAnalytic) {
  // TP 8 inside each of two DGX H100 nodes, DP 2 across them (ZeRO-1). Sharing links only slows
  // a collective down, and here that carries through to the step: the flow-level step is at
  // least the analytic one. The same input gives the same step to the picosecond.
  auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                   "/scenarios/llama2-7b-16xh100-tp8-dp2-flow.yaml");
  const auto a = driver::simulate(s, {.with_baseline = false});
  const auto b = driver::simulate(s, {.with_baseline = false});
  EXPECT_EQ(a.report.step_time, b.report.step_time);
  s.fidelity = cost::NetworkFidelity::analytic;
  const auto analytic = driver::simulate(s, {.with_baseline = false});
  EXPECT_GE(a.report.step_time, analytic.report.step_time);
  // Both levels account the same bytes on every link.
  ASSERT_EQ(a.timeline.links.bytes.size(), analytic.timeline.links.bytes.size());
  for (size_t l = 0; l < a.timeline.links.bytes.size(); ++l)
    EXPECT_DOUBLE_EQ(a.timeline.links.bytes[l], analytic.timeline.links.bytes[l]);
}

// Representative ranks at the flow level (folded replicas): tests/flow_folding_test.cpp.

}  // namespace
}  // namespace cs
