// The event engine: stream order, cross-stream dependencies, collective rendezvous, memory
// counters, determinism. Durations come from FixedCostModel (compute: flops = microseconds;
// collective: bytes = microseconds), so every expected time is plain arithmetic.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <sstream>

#include "fixed_cost_model.h"
#include "sim/chrome_trace.h"
#include "sim/report.h"

namespace cs {
namespace {

using test::op_us;

TEST(Engine, StreamOrderAndCrossStreamDependency) {
  ir::TaskGraph g(1);
  const auto compute = g.add_stream("compute");
  const auto comm = g.add_stream("comm");
  // compute: a (10us) then b (5us); comm: c (3us) may start only after a.
  const auto a = g.add_compute(0, compute, op_us(10), g.label("a", ir::Phase::forward));
  const auto b = g.add_compute(0, compute, op_us(5), g.label("b", ir::Phase::forward));
  const auto c = g.add_compute(0, comm, op_us(3), g.label("c", ir::Phase::forward));
  g.add_dependency(a, c);
  g.finalize();
  test::FixedCostModel costs;
  const auto tl = sim::Engine(g, costs).run();
  // a: [0, 10]; b follows a on its stream: [10, 15]; c waits for a across streams: [10, 13].
  EXPECT_EQ(tl.tasks[a].start, SimTime{});
  EXPECT_EQ(tl.tasks[a].end, 10_us);
  EXPECT_EQ(tl.tasks[b].start, 10_us);
  EXPECT_EQ(tl.tasks[b].end, 15_us);
  EXPECT_EQ(tl.tasks[c].start, 10_us);
  EXPECT_EQ(tl.tasks[c].end, 13_us);
  EXPECT_EQ(tl.makespan, 15_us);
}

TEST(Engine, EarlyRankWaitsAtCollectiveAndTheWaitIsIdle) {
  ir::TaskGraph g(2);
  const auto compute = g.add_stream("compute");
  const auto comm = g.add_stream("comm");
  const auto grp = g.group({0, 1});
  const auto call = g.new_collective(ir::CollectiveType::all_reduce, Bytes{5}, grp);  // 5 us
  // Rank 0 computes 10 us, rank 1 30 us, then both join the all-reduce.
  const auto a0 = g.add_compute(0, compute, op_us(10), g.label("work", ir::Phase::forward));
  const auto a1 = g.add_compute(1, compute, op_us(30), g.label("work", ir::Phase::forward));
  const auto c0 = g.add_collective(0, comm, call, g.label("ar", ir::Phase::backward));
  const auto c1 = g.add_collective(1, comm, call, g.label("ar", ir::Phase::backward));
  g.add_dependency(a0, c0);
  g.add_dependency(a1, c1);
  g.finalize();
  test::FixedCostModel costs;
  const auto tl = sim::Engine(g, costs).run();
  // Rank 0 arrives at 10 us, rank 1 at 30 us; the all-reduce runs [30, 35] on both.
  EXPECT_EQ(tl.tasks[c0].ready, 10_us);
  EXPECT_EQ(tl.tasks[c0].start, 30_us);
  EXPECT_EQ(tl.tasks[c1].start, 30_us);
  EXPECT_EQ(tl.tasks[c0].end, 35_us);
  const auto rep = sim::make_report(g, tl, {});
  // Rank 0: compute 10, communication 5 (not under compute, so exposed 5), idle = 35 - 15 = 20,
  // all of it the 20 us wait for rank 1.
  EXPECT_EQ(rep.ranks[0].compute, 10_us);
  EXPECT_EQ(rep.ranks[0].communication, 5_us);
  EXPECT_EQ(rep.ranks[0].exposed_communication, 5_us);
  EXPECT_EQ(rep.ranks[0].idle, 20_us);
  EXPECT_EQ(rep.ranks[0].peer_wait, 20_us);
  EXPECT_EQ(rep.ranks[1].idle, SimTime{});
  EXPECT_EQ(rep.ranks[1].peer_wait, SimTime{});
  EXPECT_EQ(rep.collectives.at("all_reduce").calls, 1);
}

TEST(Engine, OverlappedCommunicationIsNotExposed) {
  ir::TaskGraph g(1);
  const auto compute = g.add_stream("compute");
  const auto comm = g.add_stream("comm");
  // comm task of 4 us runs under a 10 us compute task: 100% overlap, nothing exposed.
  g.add_compute(0, compute, op_us(10), g.label("gemm", ir::Phase::backward));
  g.add_compute(0, comm, op_us(4), g.label("copy", ir::Phase::backward));
  const auto grp = g.group({0});
  const auto call = g.new_collective(ir::CollectiveType::all_reduce, Bytes{2}, grp);
  g.add_collective(0, comm, call, g.label("ar", ir::Phase::backward));  // [4, 6] under compute
  g.finalize();
  test::FixedCostModel costs;
  const auto rep = sim::make_report(g, sim::Engine(g, costs).run(), {});
  EXPECT_EQ(rep.ranks[0].communication, 2_us);
  EXPECT_EQ(rep.ranks[0].exposed_communication, SimTime{});
  EXPECT_DOUBLE_EQ(rep.ranks[0].overlap_percent, 100.0);
}

TEST(Engine, OverlappedComputeAndCommunicationSlowEachOther) {
  // Two ranks; on rank 0 a 10 us compute task and, from t = 0, a 4 us all-reduce with rank 1
  // (idle). Both slow-downs 1: each runs at half speed while the other runs on rank 0.
  //   all-reduce: rank 0 computes throughout, so 4 us of work at 1/2 -> ends at 8 us.
  //   compute: 0-8 us at 1/2 does 4 us of work; the other 6 us at full speed -> ends at 14 us.
  // Then a 3 us compute on rank 1 after the all-reduce runs alone: 8 -> 11 us.
  ir::TaskGraph g(2);
  const auto compute = g.add_stream("compute");
  const auto comm = g.add_stream("comm");
  const auto gemm = g.add_compute(0, compute, op_us(10), g.label("gemm", ir::Phase::backward));
  const auto call = g.new_collective(ir::CollectiveType::all_reduce, Bytes{4}, g.group({0, 1}));
  const auto ar0 = g.add_collective(0, comm, call, g.label("ar", ir::Phase::backward));
  const auto ar1 = g.add_collective(1, comm, call, g.label("ar", ir::Phase::backward));
  const auto after = g.add_compute(1, compute, op_us(3), g.label("after", ir::Phase::backward));
  g.add_dependency(ar1, after);
  g.finalize();
  test::FixedCostModel costs;
  costs.slowdowns = {1.0, 1.0};
  const sim::Timeline tl = sim::Engine(g, costs).run();
  EXPECT_EQ(tl.tasks[ar0].end, 8_us);
  EXPECT_EQ(tl.tasks[ar1].end, 8_us);
  EXPECT_EQ(tl.tasks[gemm].end, 14_us);
  EXPECT_EQ(tl.tasks[after].start, 8_us);
  EXPECT_EQ(tl.tasks[after].end, 11_us);
  // Without interference the same graph overlaps for free.
  costs.slowdowns = {};
  const sim::Timeline free = sim::Engine(g, costs).run();
  EXPECT_EQ(free.tasks[gemm].end, 10_us);
  EXPECT_EQ(free.tasks[ar0].end, 4_us);
}

TEST(Engine, SendWaitsForItsRecv) {
  ir::TaskGraph g(2);
  const auto s = g.add_stream("compute");
  const auto x = g.new_transfer(0, 1, Bytes{7});  // 7 us
  g.add_compute(1, s, op_us(12), g.label("busy", ir::Phase::forward));
  const auto send = g.add_send(0, s, x, g.label("send", ir::Phase::forward));
  const auto recv = g.add_recv(1, s, x, g.label("recv", ir::Phase::forward));
  g.finalize();
  test::FixedCostModel costs;
  const auto tl = sim::Engine(g, costs).run();
  // The receiver posts its recv at 12 us; the transfer runs [12, 19] on both sides.
  EXPECT_EQ(tl.tasks[send].ready, SimTime{});
  EXPECT_EQ(tl.tasks[send].start, 12_us);
  EXPECT_EQ(tl.tasks[recv].end, 19_us);
}

TEST(Engine, MemoryPeakAndBreakdown) {
  ir::TaskGraph g(1);
  const auto s = g.add_stream("compute");
  g.add_memory(0, s, 100, ir::MemoryCategory::parameters, g.label("p", ir::Phase::other));
  g.add_memory(0, s, 50, ir::MemoryCategory::activations, g.label("a", ir::Phase::forward));
  g.add_compute(0, s, op_us(1), g.label("f", ir::Phase::forward));
  g.add_memory(0, s, -50, ir::MemoryCategory::activations, g.label("a.free", ir::Phase::backward));
  g.add_memory(0, s, 20, ir::MemoryCategory::gradients, g.label("g", ir::Phase::backward));
  g.finalize();
  test::FixedCostModel costs;
  const auto tl = sim::Engine(g, costs).run();
  // Totals over time: 100, 150, 100, 120 -> peak 150 with 100 parameters + 50 activations.
  EXPECT_EQ(tl.memory[0].peak, 150);
  EXPECT_EQ(tl.memory[0].at_peak[static_cast<size_t>(ir::MemoryCategory::parameters)], 100);
  EXPECT_EQ(tl.memory[0].at_peak[static_cast<size_t>(ir::MemoryCategory::activations)], 50);
  EXPECT_EQ(tl.memory[0].at_peak[static_cast<size_t>(ir::MemoryCategory::gradients)], 0);
}

TEST(Engine, CollectiveMembersInOppositeOrderDeadlockIsReported) {
  ir::TaskGraph g(2);
  const auto s = g.add_stream("comm");
  const auto grp = g.group({0, 1});
  const auto x = g.new_collective(ir::CollectiveType::all_reduce, Bytes{1}, grp);
  const auto y = g.new_collective(ir::CollectiveType::all_reduce, Bytes{1}, grp);
  // Rank 0 issues x then y, rank 1 y then x on one in-order stream: neither can start.
  g.add_collective(0, s, x, g.label("x", ir::Phase::other));
  g.add_collective(0, s, y, g.label("y", ir::Phase::other));
  g.add_collective(1, s, y, g.label("y", ir::Phase::other));
  g.add_collective(1, s, x, g.label("x", ir::Phase::other));
  g.finalize();
  test::FixedCostModel costs;
  EXPECT_THROW(sim::Engine(g, costs).run(), std::logic_error);
}

TEST(TaskGraph, RejectsCollectiveWithMissingParticipant) {
  ir::TaskGraph g(2);
  const auto s = g.add_stream("comm");
  const auto c = g.new_collective(ir::CollectiveType::all_reduce, Bytes{1}, g.group({0, 1}));
  g.add_collective(0, s, c, g.label("ar", ir::Phase::other));
  EXPECT_THROW(g.finalize(), std::logic_error);
}

// finalize() keeps only the successor lists; dependencies() reads the explicit ones back out of
// them: grouped by their first task, each group in the order added, and a dependency that repeats
// the stream order (a -> b, b next on a's stream) kept, as it was added.
TEST(TaskGraph, ExplicitDependenciesSurviveFinalize) {
  ir::TaskGraph g(1);
  const auto compute = g.add_stream("compute");
  const auto comm = g.add_stream("comm");
  const auto l = g.label("t", ir::Phase::forward);
  const auto a = g.add_compute(0, compute, op_us(1), l);
  const auto b = g.add_compute(0, compute, op_us(1), l);  // a's stream successor
  const auto c = g.add_compute(0, comm, op_us(1), l);
  const auto d = g.add_compute(0, comm, op_us(1), l);  // c's stream successor
  g.add_dependency(b, d);
  g.add_dependency(a, c);
  g.add_dependency(a, b);  // the stream order again
  const std::vector<std::pair<ir::TaskId, ir::TaskId>> added{{b, d}, {a, c}, {a, b}};
  EXPECT_EQ(g.dependencies(), added);
  g.finalize();
  const std::vector<std::pair<ir::TaskId, ir::TaskId>> grouped{{a, c}, {a, b}, {b, d}};
  EXPECT_EQ(g.dependencies(), grouped);
  // Successors: the stream's first, then the explicit ones: a -> b (stream), c, b (explicit).
  EXPECT_EQ(std::vector<ir::TaskId>(g.successors_begin(a), g.successors_end(a)),
            (std::vector<ir::TaskId>{b, c, b}));
}

TEST(TaskGraph, IdenticalComputeOpsAreStoredOnce) {
  ir::TaskGraph g(1);
  const auto s = g.add_stream("compute");
  const auto l = g.label("k", ir::Phase::forward);
  // a, b, a again, then an op equal to a but for its flops' sign bit (-0.0 == 0.0 as doubles, yet
  // a cost model may tell them apart): three distinct ops, and the two a tasks share one.
  ir::ComputeOp zero = op_us(0);
  ir::ComputeOp minus_zero = zero;
  minus_zero.flops = Flops{-0.0};
  const auto t0 = g.add_compute(0, s, op_us(10), l);
  const auto t1 = g.add_compute(0, s, op_us(5), l);
  const auto t2 = g.add_compute(0, s, op_us(10), l);
  const auto t3 = g.add_compute(0, s, zero, l);
  const auto t4 = g.add_compute(0, s, minus_zero, l);
  g.finalize();
  EXPECT_EQ(g.compute_ops().size(), 4u);
  EXPECT_EQ(g.task(t0).payload, g.task(t2).payload);
  EXPECT_NE(g.task(t0).payload, g.task(t1).payload);
  EXPECT_NE(g.task(t3).payload, g.task(t4).payload);
  EXPECT_EQ(g.compute(g.task(t2)).flops.value, 10.0);  // op_us: flops = microseconds
  EXPECT_EQ(g.compute(g.task(t1)).flops.value, 5.0);
}

TEST(Engine, SuccessorsByIdAndByListReleaseTheSameWay) {
  // Ids in order: c (rank 1, 2us), a (rank 0, 4us), b (rank 0, 6us), d (rank 1, 1us), and d also
  // waits on b. a's one successor is b, its next id (the engine's shortcut); c's is d, three ids
  // on (its successor list). a [0, 4], b [4, 10], c [0, 2]; d is ready when the later of c and b
  // ends, 10, and runs [10, 11]: the makespan is 11 us.
  ir::TaskGraph g(2);
  const auto s = g.add_stream("compute");
  const auto l = g.label("k", ir::Phase::forward);
  const auto c = g.add_compute(1, s, op_us(2), l);
  const auto a = g.add_compute(0, s, op_us(4), l);
  const auto b = g.add_compute(0, s, op_us(6), l);
  const auto d = g.add_compute(1, s, op_us(1), l);
  g.add_dependency(b, d);
  g.finalize();
  test::FixedCostModel costs;
  const auto tl = sim::Engine(g, costs).run();
  EXPECT_EQ(tl.tasks[a].end, 4_us);
  EXPECT_EQ(tl.tasks[b].start, 4_us);
  EXPECT_EQ(tl.tasks[b].end, 10_us);
  EXPECT_EQ(tl.tasks[c].end, 2_us);
  EXPECT_EQ(tl.tasks[d].ready, 10_us);
  EXPECT_EQ(tl.tasks[d].end, 11_us);
  EXPECT_EQ(tl.makespan, 11_us);
}

}  // namespace
}  // namespace cs
