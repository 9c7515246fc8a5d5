// Engine throughput on synthetic task graphs (issue 18, point 5: 20 M events/s per core).
//
// An event is one task completion popped from the engine's queue: every task, whatever its kind,
// finishes through exactly one event, so events = tasks in the graph (the analytic level has no
// other events; re-timing under interference is off here). The figure is tasks / wall seconds of
// sim::Engine::run() alone, one thread: graph building and finalize() are outside the timing. The
// cost model returns the durations the ops carry (no roofline, no collective model), so this
// measures the scheduler, not the cost models. Run() includes the engine's setup: each distinct
// compute op priced (the graph stores identical ops once: 30 distinct ops in the mixed graph, as a
// step's layers repeat their shapes) and every task's record built.
//
// Graphs (same shape as a training step, scaled by `ranks`):
//   mixed:   per rank, `layers` x `micro_batches` forward then backward compute tasks on a compute
//            stream, an activation alloc/free (memory tasks) around each, a send/recv between
//            neighbouring ranks after each micro-batch (pipeline), and one gradient all-reduce per
//            layer on a comm stream over groups of 8 ranks, after the layer's last backward.
//            Per rank and micro-batch: 2 x layers compute and 2 x layers memory tasks, 2 send/recv;
//            per rank and step: `layers` collective tasks. At 256 ranks, 32 layers, 16
//            micro-batches: 540,672 tasks (48.5% compute, 48.5% memory, 1.5% p2p, 1.5% collective).
//   compute: one chain of compute tasks per rank (the engine's floor: a pop, a push, no peers).
// Counters: events_per_s (over wall time), events_per_cpu_s (over the thread's CPU time: the
// figure per core), events (tasks per run).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <ctime>

#include "cost_models/cost_model.h"
#include "sim/engine.h"
#include "taskgraph/task_graph.h"

namespace {

using namespace cs;

// Durations as the ops carry them: compute `flops` read as nanoseconds, communication `bytes` as
// ns.
class CarriedCosts final : public cost::CostModel {
 public:
  SimTime compute(const ir::ComputeOp& op) const override {
    return {static_cast<int64_t>(op.flops.value) * 1000};
  }
  cost::CommCost collective(const ir::CollectiveCall& c,
                            const std::vector<ir::RankId>&) const override {
    return {SimTime{c.bytes.count * 1000}};
  }
  cost::CommCost transfer(const ir::Transfer& t) const override {
    return {SimTime{t.bytes.count * 1000}};
  }
};

ir::ComputeOp op_ns(int64_t ns) {
  ir::ComputeOp op;
  op.op = ir::OpClass::gemm;
  op.flops = {static_cast<double>(ns)};
  return op;
}

ir::TaskGraph mixed_graph(uint32_t ranks, int layers, int micro_batches) {
  ir::TaskGraph g(ranks);
  const ir::StreamId compute = g.add_stream("compute");
  const ir::StreamId comm = g.add_stream("comm");
  std::vector<ir::GroupId> dp_group(ranks);
  for (uint32_t base = 0; base < ranks; base += 8) {
    std::vector<ir::RankId> members;
    for (uint32_t r = base; r < base + 8 && r < ranks; ++r) members.push_back(r);
    const ir::GroupId id = g.group(members);
    for (ir::RankId r : members) dp_group[r] = id;
  }
  // Collectives and transfers are created once per group / pair, joined by each member.
  std::vector<std::vector<ir::CollectiveId>> allreduce(ranks);  // [group base][layer]
  for (uint32_t base = 0; base < ranks; base += 8) {
    for (int l = 0; l < layers; ++l)
      allreduce[base].push_back(
          g.new_collective(ir::CollectiveType::all_reduce, Bytes{500}, dp_group[base], true));
  }
  const ir::Label fwd = g.label("fwd", ir::Phase::forward),
                  bwd = g.label("bwd", ir::Phase::backward);
  const ir::Label mem = g.label("act", ir::Phase::other), p2p = g.label("p2p", ir::Phase::other);
  const ir::Label ar = g.label("grad_allreduce", ir::Phase::backward);
  // One transfer per (pair, micro-batch): rank r (even) sends to r+1, r+1 sends back.
  for (uint32_t r = 0; r + 1 < ranks; r += 2) {
    for (int mb = 0; mb < micro_batches; ++mb) {
      const ir::TransferId there = g.new_transfer(r, r + 1, Bytes{5});
      const ir::TransferId back = g.new_transfer(r + 1, r, Bytes{5});
      g.add_send(r, compute, there, p2p);
      g.add_recv(r + 1, compute, there, p2p);
      // The tasks above and below are appended in rank order, which the engine does not care
      // about: each rank's stream order is the order of its own tasks.
      g.add_send(r + 1, compute, back, p2p);
      g.add_recv(r, compute, back, p2p);
      for (uint32_t side = r; side <= r + 1; ++side) {
        for (int l = 0; l < layers; ++l) {
          g.add_memory(side, compute, 1 << 20, ir::MemoryCategory::activations, mem);
          g.add_compute(side, compute, op_ns(100 + (side * 7 + l) % 13), fwd);
        }
        for (int l = layers - 1; l >= 0; --l) {
          const ir::TaskId b = g.add_compute(side, compute, op_ns(200 + (side * 5 + l) % 17), bwd);
          g.add_memory(side, compute, -(1 << 20), ir::MemoryCategory::activations, mem);
          if (mb == micro_batches - 1) {
            const ir::TaskId c = g.add_collective(side, comm, allreduce[side / 8 * 8][l], ar);
            g.add_dependency(b, c);
          }
        }
      }
    }
  }
  g.finalize();
  return g;
}

ir::TaskGraph compute_graph(uint32_t ranks, int tasks_per_rank) {
  ir::TaskGraph g(ranks);
  const ir::StreamId s = g.add_stream("compute");
  const ir::Label l = g.label("k", ir::Phase::forward);
  for (uint32_t r = 0; r < ranks; ++r) {
    for (int i = 0; i < tasks_per_rank; ++i) g.add_compute(r, s, op_ns(100 + (r * 7 + i) % 13), l);
  }
  g.finalize();
  return g;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void run_engine(benchmark::State& state, const ir::TaskGraph& g, bool memory_samples) {
  CarriedCosts costs;
  const double cpu0 = thread_cpu_seconds();
  for (auto _ : state) {
    sim::Timeline tl = sim::Engine(g, costs, sim::NetworkFidelity::analytic, memory_samples).run();
    benchmark::DoNotOptimize(tl.makespan);
  }
  const double events = static_cast<double>(g.size());
  state.counters["events"] = events;
  state.counters["events_per_s"] = benchmark::Counter(
      events * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  // Per core: over this thread's CPU time, so a core shared with other processes does not count
  // their share (on an idle machine the two rates agree).
  state.counters["events_per_cpu_s"] =
      events * static_cast<double>(state.iterations()) / (thread_cpu_seconds() - cpu0);
}

// Args: ranks.
void BM_engine_mixed(benchmark::State& state) {
  static const ir::TaskGraph g = mixed_graph(static_cast<uint32_t>(state.range(0)), 32, 16);
  run_engine(state, g, /*memory_samples=*/false);
}
BENCHMARK(BM_engine_mixed)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_engine_mixed_memory_samples(benchmark::State& state) {
  static const ir::TaskGraph g = mixed_graph(static_cast<uint32_t>(state.range(0)), 32, 16);
  run_engine(state, g, /*memory_samples=*/true);
}
BENCHMARK(BM_engine_mixed_memory_samples)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_engine_compute_chain(benchmark::State& state) {
  static const ir::TaskGraph g = compute_graph(static_cast<uint32_t>(state.range(0)), 8192);
  run_engine(state, g, /*memory_samples=*/false);
}
BENCHMARK(BM_engine_compute_chain)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
