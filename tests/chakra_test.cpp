// Chakra execution traces (`simulate --chakra DIR`): a hand-built two-rank graph written and read
// back node by node (types, dependencies, durations, attributes as ASTRA-sim reads them), a
// shipped pipeline scenario round-tripped (node and dependency counts derived from its graph),
// and the refusals (a representative graph, a dependency across ranks).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "driver/simulation.h"
#include "interop/chakra/chakra_trace.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cs_chakra_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

// Every compute op takes 1 us per GFLOP (so 2.5 GFLOP reads back as llround(2.5) = 3 us).
SimTime one_us_per_gflop(const ir::ComputeOp& op) {
  return SimTime::from_us(op.flops.value * 1e-9);
}

TEST(Chakra, HandBuiltGraphReadsBackNodeByNode) {
  // Two ranks, two streams (compute 0, comm 1). On each rank: gemm (4 GFLOP) -> all-reduce of
  // 1 MiB on the comm stream (explicit dependency) -> gemm (2.5 GFLOP) after the all-reduce
  // (explicit dependency); rank 0 then sends 4 KiB to rank 1, whose recv precedes a memory free.
  ir::TaskGraph g(2);
  const ir::StreamId compute = g.add_stream("compute"), comm = g.add_stream("comm");
  const ir::GroupId both = g.group({0, 1});
  const ir::CollectiveId ar =
      g.new_collective(ir::CollectiveType::all_reduce, Bytes{1 << 20}, both);
  const ir::TransferId x = g.new_transfer(0, 1, Bytes{4096});
  ir::ComputeOp big{.op = ir::OpClass::gemm, .flops = Flops{4e9}, .bytes = Bytes{1000}};
  ir::ComputeOp small{.op = ir::OpClass::gemm, .flops = Flops{2.5e9}, .bytes = Bytes{500}};
  for (ir::RankId r = 0; r < 2; ++r) {
    const ir::TaskId a = g.add_compute(r, compute, big, g.label("fwd", ir::Phase::forward));
    const ir::TaskId c = g.add_collective(r, comm, ar, g.label("grad_ar", ir::Phase::backward));
    const ir::TaskId b = g.add_compute(r, compute, small, g.label("bwd", ir::Phase::backward));
    g.add_dependency(a, c);
    g.add_dependency(c, b);
    if (r == 0)
      g.add_send(r, comm, x, g.label("send", ir::Phase::other));
    else {
      const ir::TaskId rv = g.add_recv(r, comm, x, g.label("recv", ir::Phase::other));
      const ir::TaskId m = g.add_memory(r, compute, -4096, ir::MemoryCategory::activations,
                                        g.label("free", ir::Phase::other));
      g.add_dependency(rv, m);
    }
  }
  g.finalize();
  const std::string dir = fresh_dir("hand");
  interop::ChakraInput in{
      .graph = &g, .compute_time = one_us_per_gflop, .start_time = {}, .generator = "test"};
  const auto sum = interop::write_chakra_traces(in, dir);
  // 3 + 1 tasks on rank 0, 3 + 2 on rank 1; 4 compute, 2 collective, 1 send, 1 recv, 1 memory.
  EXPECT_EQ(sum.files, 2);
  EXPECT_EQ(sum.nodes, 9);
  EXPECT_EQ(sum.compute, 4);
  EXPECT_EQ(sum.collectives, 2);
  EXPECT_EQ(sum.sends, 1);
  EXPECT_EQ(sum.recvs, 1);
  EXPECT_EQ(sum.memory, 1);
  EXPECT_EQ(sum.groups, 1);
  // Dependencies, rank 0: c <- a (explicit), b <- a (stream) and c (explicit), send <- c (stream)
  // = 4; rank 1: the same 4, plus free <- b (stream) and rv (explicit) = 6; 10 in all.
  EXPECT_EQ(sum.dependencies, 10);

  const auto r0 = interop::read_chakra_trace(dir + "/clustersim.0.et");
  const auto r1 = interop::read_chakra_trace(dir + "/clustersim.1.et");
  EXPECT_EQ(r0.version, "0.0.4");
  ASSERT_EQ(r0.nodes.size(), 4u);
  ASSERT_EQ(r1.nodes.size(), 5u);
  // Rank 0, node by node (ids follow the rank's task order).
  EXPECT_EQ(r0.nodes[0].type, interop::kChakraCompNode);
  EXPECT_EQ(r0.nodes[0].duration_micros, 4u);  // 4 GFLOP at 1 us per GFLOP
  EXPECT_EQ(r0.nodes[0].attr("num_ops"), 4'000'000'000);
  EXPECT_EQ(r0.nodes[0].attr("tensor_size"), 1000);
  EXPECT_EQ(r0.nodes[0].attr("is_cpu_op"), 0);
  EXPECT_EQ(r0.nodes[0].text_attr("op_class"), "gemm");
  EXPECT_TRUE(r0.nodes[0].data_deps.empty());
  EXPECT_EQ(r0.nodes[1].type, interop::kChakraCollNode);
  EXPECT_EQ(r0.nodes[1].attr("comm_type"), 0);  // Chakra's ALL_REDUCE
  EXPECT_EQ(r0.nodes[1].attr("comm_size"), 1 << 20);
  EXPECT_EQ(r0.nodes[1].text_attr("pg_name"), "1");  // group 0, written as "1"
  EXPECT_EQ(r0.nodes[1].data_deps, (std::vector<uint64_t>{0}));
  EXPECT_EQ(r0.nodes[2].duration_micros, 3u);                       // llround(2.5)
  EXPECT_EQ(r0.nodes[2].data_deps, (std::vector<uint64_t>{0, 1}));  // stream first, then explicit
  EXPECT_EQ(r0.nodes[3].type, interop::kChakraSendNode);
  EXPECT_EQ(r0.nodes[3].attr("comm_src"), 0);
  EXPECT_EQ(r0.nodes[3].attr("comm_dst"), 1);
  EXPECT_EQ(r0.nodes[3].attr("comm_size"), 4096);
  EXPECT_EQ(r0.nodes[3].data_deps, (std::vector<uint64_t>{1}));  // after the all-reduce on comm
  // Rank 1: the recv meets the send by tag; the free waits for the gemm (stream) and the recv.
  EXPECT_EQ(r1.nodes[3].type, interop::kChakraRecvNode);
  EXPECT_EQ(r1.nodes[3].attr("comm_tag"), r0.nodes[3].attr("comm_tag"));
  EXPECT_EQ(r1.nodes[4].type, interop::kChakraCompNode);
  EXPECT_EQ(r1.nodes[4].attr("memory_delta"), -4096);
  EXPECT_EQ(r1.nodes[4].duration_micros, 0u);
  EXPECT_EQ(r1.nodes[4].data_deps, (std::vector<uint64_t>{2, 3}));

  std::ifstream groups(dir + "/comm_group.json");
  const auto doc = nlohmann::json::parse(groups);
  EXPECT_EQ(doc.at("1"), nlohmann::json::array({0, 1}));
  std::filesystem::remove_all(dir);
}

TEST(Chakra, PipelineScenarioRoundTripsItsGraph) {
  // The 2-stage pipeline on two cpu ranks: every task becomes one node of its rank's file, and the
  // dependencies read back equal those derived from the graph: per task, its stream predecessor
  // plus its explicit same-rank predecessors other than that one.
  auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                   "/scenarios/cpu-gpt-tiny-2stage-pp.yaml");
  const driver::Platform platform(s);
  const auto r = driver::simulate(
      s, {.with_baseline = false, .suggest = false, .ranks = driver::RankMode::all}, &platform);
  const ir::TaskGraph& g = r.step.graph;
  std::vector<int64_t> tasks(g.ranks(), 0), deps(g.ranks(), 0);
  std::vector<std::vector<ir::TaskId>> explicit_preds(g.size());
  for (const auto& [before, after] : g.dependencies()) explicit_preds[after].push_back(before);
  std::map<std::pair<ir::RankId, ir::StreamId>, ir::TaskId> last;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const auto& task = g.task(t);
    ++tasks[task.rank];
    const auto key = std::make_pair(task.rank, task.stream);
    const auto prev = last.find(key);
    if (prev != last.end()) ++deps[task.rank];
    for (const ir::TaskId p : explicit_preds[t])
      if (prev == last.end() || p != prev->second) ++deps[task.rank];
    last[key] = t;
  }
  const std::string dir = fresh_dir("pp");
  interop::ChakraInput in{
      .graph = &g,
      .compute_time = [&](const ir::ComputeOp& op) { return platform.costs().compute(op); },
      .start_time = [&](ir::TaskId t) { return r.timeline.tasks[t].start; },
      .generator = "test"};
  interop::write_chakra_traces(in, dir);
  int sends = 0, recvs = 0;
  for (ir::RankId rank = 0; rank < g.ranks(); ++rank) {
    const auto trace =
        interop::read_chakra_trace(dir + "/clustersim." + std::to_string(rank) + ".et");
    ASSERT_EQ(static_cast<int64_t>(trace.nodes.size()), tasks[rank]) << "rank " << rank;
    int64_t read_deps = 0;
    for (size_t i = 0; i < trace.nodes.size(); ++i) {
      EXPECT_EQ(trace.nodes[i].id, i);
      read_deps += static_cast<int64_t>(trace.nodes[i].data_deps.size());
      for (const uint64_t d : trace.nodes[i].data_deps) EXPECT_LT(d, trace.nodes.size());
      sends += trace.nodes[i].type == interop::kChakraSendNode;
      recvs += trace.nodes[i].type == interop::kChakraRecvNode;
    }
    EXPECT_EQ(read_deps, deps[rank]) << "rank " << rank;
  }
  // The pipeline's activations and gradients: one send and one recv per transfer.
  EXPECT_EQ(sends, static_cast<int>(g.transfer_count()));
  EXPECT_EQ(recvs, static_cast<int>(g.transfer_count()));
  EXPECT_GT(sends, 0);
  std::filesystem::remove_all(dir);
}

TEST(Chakra, RefusesWhatATraceCannotSay) {
  // A representative graph (rank 0 standing for cluster rank 0 of 8) lacks the other ranks' files.
  ir::TaskGraph rep(1);
  rep.set_cluster_ranks({0}, 8);
  rep.add_stream("compute");
  rep.add_compute(0, 0, {.op = ir::OpClass::gemm, .flops = Flops{1e9}},
                  rep.label("x", ir::Phase::forward));
  rep.finalize();
  const std::string dir = fresh_dir("refuse");
  interop::ChakraInput in{.graph = &rep, .compute_time = one_us_per_gflop};
  try {
    interop::write_chakra_traces(in, dir);
    ADD_FAILURE() << "a representative graph was written";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--ranks all"), std::string::npos) << e.what();
  }
  // A dependency from rank 0's task to rank 1's that is no transfer.
  ir::TaskGraph cross(2);
  cross.add_stream("compute");
  const ir::TaskId a = cross.add_compute(0, 0, {.op = ir::OpClass::gemm, .flops = Flops{1e9}},
                                         cross.label("a", ir::Phase::forward));
  const ir::TaskId b = cross.add_compute(1, 0, {.op = ir::OpClass::gemm, .flops = Flops{1e9}},
                                         cross.label("b", ir::Phase::forward));
  cross.add_dependency(a, b);
  cross.finalize();
  in.graph = &cross;
  try {
    interop::write_chakra_traces(in, dir);
    ADD_FAILURE() << "a cross-rank dependency was written";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("1 dependencies between ranks"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Chakra, ReadingAnotherFormatSaysSo) {
  const std::string path = fresh_dir("notet") + ".et";
  std::ofstream(path) << "{\"traceEvents\": []}";
  EXPECT_THROW(interop::read_chakra_trace(path), UserError);
  std::filesystem::remove(path);
}

TEST(Chakra, DevZeroIsRefusedNotReadWithoutEnd) {
  // /dev/zero reads as zero-length Node messages forever (issue 34): refused before any read.
  try {
    interop::read_chakra_trace("/dev/zero");
    ADD_FAILURE() << "read";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/dev/zero: not a regular file; a Chakra trace is read from a file");
  }
}

}  // namespace
}  // namespace cs
