// `clustersim plan`: which layout trains fastest (or leanest) for a model on a cluster.
//
// 1. Enumerate: every TP x PP x DP that divides the GPUs, every data-parallel flavour the layout
//    allows (DDP, ZeRO-1, and for pp = 1 also ZeRO-2, FSDP SHARD_GRAD_OP and FULL_SHARD),
//    micro-batch size, pipeline schedule (GPipe, 1F1B, interleaved with v chunks), activation
//    recompute and DDP/ZeRO bucket size; strategy::validate rejects what the model or batch
//    cannot take (counted by reason). Sequence parallelism is on whenever tp > 1.
// 2. Prune by a memory lower bound that needs no simulation: model state on the busiest rank
//    (parameters / (tp x pp), sharded as the flavour shards them) plus the activations of the
//    first stage's layers for the micro-batches it must hold (m under GPipe, p under 1F1B, 1
//    without a pipeline). Anything whose bound exceeds the GPU's memory cannot fit.
// 3. Fast level: simulate every survivor with representative ranks and few micro-batches. Past
//    pipeline fill, a step is linear in the micro-batch count, so two short runs (p and p + 1
//    micro-batches, p and 2p interleaved, 1 and 2 without a pipeline, 2 and 3 for FSDP) extrapolate step time and
//    per-rank compute / exposed / idle time to the real count, exactly for equal stages; peak
//    memory grows with the count only under GPipe. A test checks fast against detailed.
// 4. Detailed level: the best fast candidates are simulated with their real micro-batch count.
// Ranked: layouts that fit in their own simulation, by the objective. Same input, same ranking
// (candidates are evaluated in parallel but ordered by value, then by enumeration order).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace cs::planner {

struct PlanSpace {
  std::vector<int64_t> micro_batches{1, 2, 4, 8};
  std::vector<Bytes> bucket_sizes{Bytes{25LL << 20}, Bytes{100LL << 20}};
  std::vector<model::Recompute> recompute{model::Recompute::none, model::Recompute::selective, model::Recompute::full};
  int max_virtual_stages = 4;  // interleaved 1F1B with v = 2 .. this many chunks per stage
};

struct Candidate {
  strategy::Layout layout;
  strategy::TrainingSpec training;
  std::string describe() const;  // "tp8 pp4 dp16 zero1 mb1 interleaved(v2) rc:selective b:25MiB"
};

struct Enumeration {
  size_t considered = 0;                 // combinations generated
  std::vector<Candidate> candidates;     // the valid ones
  std::map<std::string, size_t> invalid; // why the rest were rejected, by reason
};
Enumeration enumerate_layouts(const scenario::Scenario& base, const PlanSpace& space);

// Lower bound on the busiest rank's peak memory, in bytes, by part.
struct MemoryBound {
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, activations = 0;
  int64_t total() const { return parameters + gradients + optimizer_state + activations; }
};
MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c);

struct Evaluation {
  size_t candidate = 0;          // index into Enumeration::candidates
  bool detailed = false;         // simulated with the real micro-batch count
  SimTime step_time;
  double tokens_per_second = 0;
  double mfu = 0;
  int64_t peak_memory = 0;
  std::array<int64_t, ir::kMemoryCategoryCount> at_peak{};
  bool fits = false;
  double bubble = 0;             // largest pipeline-stage idle share
  SimTime compute, exposed_communication, idle;  // means over the simulated ranks
  std::string error;             // the simulation failed (a strategy or engine error): never ranked
};

enum class Objective : uint8_t { throughput, memory };

struct PlanOptions {
  Objective objective = Objective::throughput;
  size_t detailed = 8;           // how many of the best fast candidates get the detailed level
  unsigned threads = 0;          // 0: every core
  // Called as work completes: (stage "fast" | "detailed", done, total). From worker threads,
  // one call at a time.
  std::function<void(const char*, size_t, size_t)> progress;
};

struct Pruned {
  size_t candidate = 0;
  MemoryBound bound;
  std::string reason;
};

struct PlanResult {
  Enumeration enumeration;
  std::vector<Pruned> pruned;
  std::vector<Evaluation> evaluations;   // every simulated candidate, best fidelity, enumeration order
  std::vector<size_t> ranked;            // indices into evaluations: fitting, best first
  std::vector<size_t> pareto;            // indices into evaluations: throughput vs memory frontier
  double seconds = 0;
  bool any_fits() const { return !ranked.empty(); }
  size_t out_of_memory() const;          // simulated and found not to fit
  size_t failed() const;                 // whose simulation failed (see Evaluation::error)
  std::map<std::string, size_t> pruned_reasons() const;
};

PlanResult plan(const scenario::Scenario& base, const PlanSpace& space, const PlanOptions& options);

// The scenario with a candidate's layout and training set-up.
scenario::Scenario with_candidate(const scenario::Scenario& base, const Candidate& c);

}  // namespace cs::planner
