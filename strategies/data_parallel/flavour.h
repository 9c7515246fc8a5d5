// The data-parallel registry: one owner per flavour (DDP bucketed, DDP flat, ZeRO-1, ZeRO-2, FSDP
// SHARD_GRAD_OP, FSDP FULL_SHARD) that answers every question asked of it: the policy that emits
// its tasks, the model state it keeps per rank at rest and what it unshards at its peak (the
// planner's memory bound), its exposed communication in closed form (the planner's step
// estimate), the layouts it refuses, whether the planner tries it, its names and its launch
// arguments. Looked up by the enum; each flavour lives beside its policy (ddp.cpp, zero.cpp,
// fsdp.cpp), so what the simulator emits and what the planner assumes of it are read side by side.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/model_work.h"
#include "models/software_stack.h"
#include "strategies/launch_args.h"
#include "strategies/layout.h"
#include "strategies/model_state.h"

namespace cs::strategy {

class DataParallelPolicy;
struct PolicyContext;
class StepEmitter;

// One pipeline stage's data-parallel communication, priced for the planner's closed form
// (planner/step_estimate.cpp).
struct StageCommunication {
  double reduce = 0;  // reducing the stage's gradients once, by the flavour's gradient_collective
  double gather = 0;  // all-gathering the stage's parameters once (sharded flavours; else 0)
  double forward = 0, backward = 0;  // one micro-batch's compute beside which it can run
  double micro_batches = 1;
  int pp = 1;
  int blocks = 1;           // the stage's blocks: FSDP's units
  double bucket_share = 1;  // one bucket's share of the stage's gradients, at most 1
  double slowdown = 0;      // compute slowed by communication running beside it
  bool overlap_param_gather = false;
  int fsdp_version = 1;  // layout.fsdp_version: FSDP2 reduces every micro-batch (fsdp.cpp)
  model::Stack stack = model::Stack::ideal;  // DeepSpeed's ZeRO-3 reduces every micro-batch too
  // `comm` seconds issued beside `under` seconds of compute: what outlasts the compute, the last
  // unit's share (`last`, issued after the last compute), and the compute's slowdown.
  double exposed(double comm, double under, double last) const;
};

// What a flavour unshards beside its resting state (the planner's memory bound).
struct UnshardedState {
  int64_t whole = 0;         // the stage's parameters per rank, unsharded
  int64_t largest_unit = 0;  // the largest unit's (block's) parameters per rank
  int pp = 1;
  int64_t micro_batches = 1;
  int fsdp_version = 1;  // layout.fsdp_version: FSDP2 holds no unsharded gradients across them
  model::Stack stack = model::Stack::ideal;  // DeepSpeed's ZeRO-3 neither: its bucket instead
  Bytes bucket{};                            // layout.bucket_size
  model::PrecisionInfo precision{};
};

class DataParallelFlavour {
 public:
  DataParallelFlavour(DataParallel id, std::string_view name, int zero_stage)
      : id(id), name(name), zero_stage(zero_stage) {}
  virtual ~DataParallelFlavour() = default;

  const DataParallel id;
  const std::string_view name;  // the scenario's and the report's
  // Stage of the ZeRO paper the flavour shards to (0: nothing sharded, 3: parameters too).
  const int zero_stage;
  virtual bool fsdp() const { return false; }
  // Gradients synchronised in PyTorch DDP's buckets (layout.bucket_size matters).
  virtual bool bucketed() const { return false; }
  // Other names the scenario reader accepts for it.
  virtual std::vector<std::string_view> aliases() const { return {}; }

  // --- the tasks ------------------------------------------------------------------------------
  virtual std::unique_ptr<DataParallelPolicy> make_policy(const PolicyContext& c,
                                                          StepEmitter& e) const = 0;
  // A stream for parameter gathers (ZeRO's after the step, FSDP's around use).
  bool needs_gather_stream() const { return fsdp() || zero_stage > 0; }

  // --- memory ---------------------------------------------------------------------------------
  // The ZeRO paper's accounting (model_state.h) of `params` parameters shared by `ranks` ranks;
  // ZeRO/FSDP pad each sharded part up to a multiple of ranks.
  ModelState model_state(int64_t params, const model::PrecisionInfo& p, int ranks) const;
  // What it unshards at its peak beyond that state (FSDP's gathered units and their gradients).
  virtual ModelState unsharded_at_peak(const UnshardedState&) const { return {}; }

  // --- the planner's closed form --------------------------------------------------------------
  ir::CollectiveType gradient_collective() const {
    return zero_stage > 0 ? ir::CollectiveType::reduce_scatter : ir::CollectiveType::all_reduce;
  }
  // Bytes a gradient element takes in the data-parallel reduction: the gradients' own
  // (precision.grad_bytes), except under FSDP2, which casts them to its MixedPrecisionPolicy's
  // reduce_dtype before reducing (foreach_reduce's chunk_cat). TorchTitan sets fp32 there
  // (parallelism.mixed_precision_reduce, "float32" by default; config/job_config.py), so 16-bit
  // gradients reduce-scatter as 4 B an element; `reduce_in_bf16` (training.grad_reduce_in_bf16,
  // mixed_precision_reduce "bfloat16") keeps the gradients' own 2.
  int64_t reduced_gradient_bytes(const model::PrecisionInfo& p, int fsdp_version,
                                 bool reduce_in_bf16) const;
  // The optimizer steps a 1/ranks shard of the parameters.
  bool shards_optimizer() const { return zero_stage > 0; }
  // Seconds of one stage's data-parallel communication the step waits for.
  virtual double exposed_seconds(const StageCommunication& c) const = 0;

  // --- constraints ----------------------------------------------------------------------------
  // Why the layout cannot run it ("" when it can): under a pipeline, with expert parallelism.
  virtual std::string pipeline_refusal(const Layout&) const { return ""; }
  virtual std::string expert_parallel_refusal(const Layout&) const { return ""; }
  // Megatron's --overlap-param-gather: the updated parameters' all-gather after the step.
  virtual bool admits_overlap_param_gather() const { return false; }
  // Whether the planner tries it on `gradient_ranks` ranks with `pp` stages.
  virtual bool planned(int gradient_ranks, int pp) const = 0;
  // Whether the planner tries it with expert parallelism (ep > 1).
  virtual bool planned_with_expert_parallelism() const { return true; }
  // Whether the framework `stack` stands for runs it with `pp` stages (ideal: every flavour, a
  // bound); the sources are in flavour.cpp.
  bool run_by(model::Stack stack, int pp) const;
  // The FSDP implementation `stack` runs (layout.fsdp_version): 2, per-parameter sharding that
  // reduce-scatters every micro-batch and keeps only sharded gradients, where the framework's
  // FSDP is fully_shard or shards its gradient buffer; else 1 (FSDP1 with no_sync).
  int fsdp_version_run_by(model::Stack stack) const;
  // Offered when a run does not fit (driver's suggestions), in order of the state it shards.
  virtual bool saves_memory() const { return false; }

  // --- names and launch -----------------------------------------------------------------------
  virtual LaunchArgs megatron_args(const Layout& l) const = 0;
  // torchrun / PyTorch sketch lines wrapping the model; `param_dtype` e.g. "bfloat16".
  virtual std::string torchrun_setup(const Layout& l, std::string_view param_dtype) const = 0;
  // The report's " (bucket 25.00 MiB, 12 buckets)" for `units` sync units.
  virtual std::string units_description(const Layout& l, size_t units) const = 0;

 protected:
  // The resting state of `whole` shared by `ranks` ranks.
  virtual ModelState shard_state(const ModelState& whole, int ranks) const = 0;
  // DDP's and ZeRO's buckets: Megatron's bucket flag and the report's description.
  static std::string megatron_bucket_arg(const Layout& l);
  static std::string buckets_description(const Layout& l, size_t units);
  // One rank's share of `bytes` over `ranks`, rounded up.
  static int64_t shard(int64_t bytes, int ranks) { return (bytes + ranks - 1) / ranks; }
};

// The registry.
const DataParallelFlavour& data_parallel_flavour(DataParallel d);
// The flavour over `ranks` ranks: one rank shares nothing, so every flavour keeps DDP's whole state
// and communicates nothing.
const DataParallelFlavour& data_parallel_flavour(DataParallel d, int ranks);
// Every flavour in enum order.
const std::vector<const DataParallelFlavour*>& data_parallel_flavours();
// (name, flavour) pairs for the scenario reader, aliases after each flavour's own name.
std::vector<std::pair<std::string, DataParallel>> data_parallel_names();

// The owners (ddp.cpp, zero.cpp, fsdp.cpp).
const DataParallelFlavour& ddp_flavour(bool bucketed);
const DataParallelFlavour& zero_flavour(int stage);
const DataParallelFlavour& fsdp_flavour(bool full_shard);

}  // namespace cs::strategy
